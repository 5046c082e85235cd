//===- Fatbin.cpp - What an nvcc fat binary says of its kernels ------------===//
//
// Layouts as nvcc 13 writes them (read from `cuobjdump`-able binaries here):
//  - wrapper {magic 0x466243b1, version, data, ...} (fatbinary_section.h);
//  - data: header {u32 magic 0xba55ed50, u16 version, u16 header size,
//    u64 size of the entries}, then entries {u16 kind (2: cubin),
//    u16 version, u32 header size, u64 payload size, ..., u64 flags at +0x28
//    (0x2000: compressed)}, each payload following its header;
//  - cubin: ELF64; `.nv.info.<kernel>` holds records {u8 format, u8 attribute,
//    value}: format 4 carries a u16 size and that many bytes, formats 1-3 fit
//    in the 4-byte record. Attribute 0x17 (KPARAM_INFO) is {u32 index,
//    u16 ordinal, u16 offset, u32 bits (size in bytes at bit 18)};
//  - resources: the module-wide `.nv.info` holds, per kernel symbol (the
//    symbol index is the sh_info of the kernel's `.text.<kernel>`), 0x2f
//    (REGCOUNT) {u32 symbol, u32 registers} and 0x11 (FRAME_SIZE) {u32 symbol,
//    u32 bytes}; `.nv.info.<kernel>` may hold 0x05 (MAX_THREADS) {u32 x, y, z}.
//    Static shared memory is the size of `.nv.shared.<kernel>` (NOBITS); a
//    cubin with a `.nv.shared.reserved.0` section (sm_90 and later) counts the
//    1 KiB the system reserves per block at the start of each of those. The
//    SASS architecture is in e_flags: bits 8-15 from ELF ABI version 8 on
//    (nvcc 12.8+), bits 0-7 before.
//
//===----------------------------------------------------------------------===//
#include "Fatbin.h"

#include <fatbinary_section.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <elf.h>
#include <string_view>

namespace deepum::standin {

namespace {

constexpr uint32_t kFatbinMagic = 0xba55ed50;
constexpr uint16_t kKindCubin = 2;
constexpr uint64_t kFlagCompressed = 0x2000;
constexpr uint8_t kFormatSval = 4;
constexpr uint8_t kAttrKparamInfo = 0x17;
constexpr uint8_t kAttrMaxThreads = 0x05;
constexpr uint8_t kAttrFrameSize = 0x11;
constexpr uint8_t kAttrRegCount = 0x2f;
constexpr uint32_t kReservedSharedPrefix = 1024;
// Entries are bounded by the header's size; this caps a corrupt one.
constexpr uint64_t kMaxFatbinBytes = uint64_t{1} << 34;
constexpr uint64_t kMaxGlobalBytes = uint64_t{1} << 30; // one variable's initial value

template <typename T> T load(const uint8_t *P) {
  T V;
  std::memcpy(&V, P, sizeof(T));
  return V;
}

/// Each `.nv.info` record carrying a value (format 4): its attribute and
/// bytes. The other formats fit in their 4-byte record and are skipped.
template <typename Fn> void forEachNvInfo(const uint8_t *P, uint64_t Size, Fn F) {
  uint64_t I = 0;
  while (I + 4 <= Size) {
    const uint8_t Format = P[I];
    const uint8_t Attr = P[I + 1];
    if (Format != kFormatSval) {
      I += 4;
      continue;
    }
    const uint16_t Len = load<uint16_t>(P + I + 2);
    if (I + 4 + Len > Size)
      return;
    F(Attr, P + I + 4, Len);
    I += 4 + Len;
  }
}

void readNvInfo(const uint8_t *P, uint64_t Size, ParamLayout &Out) {
  forEachNvInfo(P, Size, [&](uint8_t Attr, const uint8_t *V, uint16_t Len) {
    if (Attr != kAttrKparamInfo || Len < 12)
      return;
    const uint16_t Ordinal = load<uint16_t>(V + 4);
    const uint16_t Offset = load<uint16_t>(V + 6);
    const uint32_t Bits = load<uint32_t>(V + 8);
    const uint32_t Bytes = (Bits >> 18) & 0x3fff;
    if (Ordinal < 4096) {
      if (Out.Sizes.size() <= Ordinal) {
        Out.Sizes.resize(Ordinal + 1, 0);
        Out.Offsets.resize(Ordinal + 1, 0);
      }
      Out.Sizes[Ordinal] = Bytes;
      Out.Offsets[Ordinal] = Offset;
    }
  });
}

/// A 64-bit ELF image's header, when its section table lies inside it.
std::optional<Elf64_Ehdr> elfHeader(const uint8_t *P, uint64_t Size) {
  if (Size < sizeof(Elf64_Ehdr) || std::memcmp(P, ELFMAG, SELFMAG) != 0 ||
      P[EI_CLASS] != ELFCLASS64)
    return std::nullopt;
  const auto H = load<Elf64_Ehdr>(P);
  if (H.e_shentsize != sizeof(Elf64_Shdr) || H.e_shoff > Size ||
      uint64_t{H.e_shnum} * sizeof(Elf64_Shdr) > Size - H.e_shoff || H.e_shstrndx >= H.e_shnum)
    return std::nullopt;
  return H;
}

/// Section I of an image whose header elfHeader accepted.
Elf64_Shdr elfSection(const uint8_t *P, const Elf64_Ehdr &H, unsigned I) {
  return load<Elf64_Shdr>(P + H.e_shoff + I * sizeof(Elf64_Shdr));
}

void readCubin(const uint8_t *P, uint64_t Size,
               std::unordered_map<std::string, ParamLayout> &Out) {
  const std::optional<Elf64_Ehdr> Header = elfHeader(P, Size);
  if (!Header)
    return;
  const Elf64_Ehdr &H = *Header;
  auto section = [&](unsigned I) { return elfSection(P, H, I); };
  const Elf64_Shdr Names = section(H.e_shstrndx);
  if (Names.sh_offset > Size || Names.sh_size > Size - Names.sh_offset)
    return;
  static constexpr char Prefix[] = ".nv.info.";
  for (unsigned I = 0; I < H.e_shnum; ++I) {
    const Elf64_Shdr S = section(I);
    if (S.sh_name >= Names.sh_size || S.sh_offset > Size || S.sh_size > Size - S.sh_offset)
      continue;
    const char *Name = reinterpret_cast<const char *>(P + Names.sh_offset + S.sh_name);
    const size_t MaxLen = Names.sh_size - S.sh_name;
    const size_t Len = strnlen(Name, MaxLen);
    if (Len == MaxLen || Len <= sizeof(Prefix) - 1 ||
        std::strncmp(Name, Prefix, sizeof(Prefix) - 1) != 0)
      continue;
    std::string Kernel(Name + sizeof(Prefix) - 1, Len - (sizeof(Prefix) - 1));
    if (Out.count(Kernel))
      continue; // another architecture's cubin said the same
    ParamLayout L;
    readNvInfo(P + S.sh_offset, S.sh_size, L);
    Out.emplace(std::move(Kernel), std::move(L));
  }
}

} // namespace

namespace {

/// Calls F(bytes, size) for each uncompressed cubin of the fat binary behind
/// nvcc's wrapper.
template <typename Fn> void forEachCubin(const void *FatbinWrapper, Fn F) {
  const auto *W = static_cast<const __fatBinC_Wrapper_t *>(FatbinWrapper);
  if (!W || static_cast<uint32_t>(W->magic) != FATBINC_MAGIC || !W->data)
    return;
  const auto *D = reinterpret_cast<const uint8_t *>(W->data);
  if (load<uint32_t>(D) != kFatbinMagic)
    return;
  const uint16_t HeaderSize = load<uint16_t>(D + 6);
  const uint64_t Total = load<uint64_t>(D + 8);
  if (HeaderSize < 16 || Total > kMaxFatbinBytes)
    return;
  const uint8_t *E = D + HeaderSize;
  const uint8_t *End = E + Total;
  while (E + 0x40 <= End) {
    const uint16_t Kind = load<uint16_t>(E);
    const uint32_t EntryHeader = load<uint32_t>(E + 4);
    const uint64_t Payload = load<uint64_t>(E + 8);
    const uint64_t Flags = load<uint64_t>(E + 0x28);
    if (EntryHeader < 0x40 || EntryHeader > static_cast<uint64_t>(End - E) ||
        Payload > static_cast<uint64_t>(End - E) - EntryHeader)
      break;
    if (Kind == kKindCubin && !(Flags & kFlagCompressed))
      F(E + EntryHeader, Payload);
    E += EntryHeader + Payload;
  }
}

/// The initial values of a cubin's global variables: each symbol of the
/// symbol table defined in an initialised data section (.nv.global.init...),
/// its bytes; a variable in a section without data (.nv.global) is zeros.
void readGlobalsOfCubin(const uint8_t *P, uint64_t Size,
                        std::unordered_map<std::string, std::vector<uint8_t>> &Out) {
  const std::optional<Elf64_Ehdr> Header = elfHeader(P, Size);
  if (!Header)
    return;
  const Elf64_Ehdr &H = *Header;
  auto section = [&](unsigned I) { return elfSection(P, H, I); };
  auto inside = [&](const Elf64_Shdr &S) {
    return S.sh_type == SHT_NOBITS || (S.sh_offset <= Size && S.sh_size <= Size - S.sh_offset);
  };
  const Elf64_Shdr Names = section(H.e_shstrndx);
  if (!inside(Names))
    return;
  auto nameOf = [&](const Elf64_Shdr &Strings, uint32_t At) -> std::string {
    if (At >= Strings.sh_size)
      return {};
    const char *C = reinterpret_cast<const char *>(P + Strings.sh_offset + At);
    return std::string(C, strnlen(C, Strings.sh_size - At));
  };
  for (unsigned I = 0; I < H.e_shnum; ++I) {
    const Elf64_Shdr Sym = section(I);
    if (Sym.sh_type != SHT_SYMTAB || !inside(Sym) || Sym.sh_link >= H.e_shnum ||
        Sym.sh_entsize != sizeof(Elf64_Sym))
      continue;
    const Elf64_Shdr Strings = section(Sym.sh_link);
    if (!inside(Strings))
      continue;
    for (uint64_t K = 0; K < Sym.sh_size / sizeof(Elf64_Sym); ++K) {
      const auto Y = load<Elf64_Sym>(P + Sym.sh_offset + K * sizeof(Elf64_Sym));
      if (ELF64_ST_TYPE(Y.st_info) != STT_OBJECT || Y.st_shndx == SHN_UNDEF ||
          Y.st_shndx >= H.e_shnum || Y.st_size == 0 || Y.st_size > kMaxGlobalBytes)
        continue;
      const Elf64_Shdr Home = section(Y.st_shndx);
      const std::string Section = nameOf(Names, Home.sh_name);
      if (Section.rfind(".nv.global", 0) != 0 || !inside(Home) || Y.st_value > Home.sh_size ||
          Y.st_size > Home.sh_size - Y.st_value)
        continue;
      std::string Name = nameOf(Strings, Y.st_name);
      if (Name.empty() || Out.count(Name))
        continue; // another architecture's cubin said the same
      std::vector<uint8_t> Bytes(Y.st_size, 0);
      if (Home.sh_type != SHT_NOBITS)
        std::memcpy(Bytes.data(), P + Home.sh_offset + Y.st_value, Y.st_size);
      Out.emplace(std::move(Name), std::move(Bytes));
    }
  }
}

/// The rest of `Name` after `Prefix`, or empty when it does not start so.
std::string_view after(std::string_view Name, std::string_view Prefix) {
  return Name.size() > Prefix.size() && Name.substr(0, Prefix.size()) == Prefix
             ? Name.substr(Prefix.size())
             : std::string_view();
}

/// What a cubin's kernels need of an SM (Fatbin.h, KernelResources); a
/// kernel already in `Out` is replaced only by the cubin built for
/// `PreferArch`.
void readResourcesOfCubin(const uint8_t *P, uint64_t Size, int PreferArch,
                          std::unordered_map<std::string, KernelResources> &Out) {
  const std::optional<Elf64_Ehdr> Header = elfHeader(P, Size);
  if (!Header)
    return;
  const Elf64_Ehdr &H = *Header;
  auto section = [&](unsigned I) { return elfSection(P, H, I); };
  auto inFile = [&](const Elf64_Shdr &S) {
    return S.sh_offset <= Size && S.sh_size <= Size - S.sh_offset;
  };
  const Elf64_Shdr Names = section(H.e_shstrndx);
  if (!inFile(Names))
    return;
  std::unordered_map<std::string, KernelResources> Here;
  std::unordered_map<uint32_t, std::string> BySymbol; // kernel symbol -> name
  std::unordered_map<std::string, uint32_t> SharedSection;
  bool ReservedPrefix = false;
  std::optional<Elf64_Shdr> Info;
  for (unsigned I = 0; I < H.e_shnum; ++I) {
    const Elf64_Shdr S = section(I);
    if (S.sh_name >= Names.sh_size)
      continue;
    const char *C = reinterpret_cast<const char *>(P + Names.sh_offset + S.sh_name);
    const std::string_view Name(C, strnlen(C, Names.sh_size - S.sh_name));
    const std::string_view Text = after(Name, ".text.");
    const std::string_view Shared = after(Name, ".nv.shared.");
    const std::string_view NvInfo = after(Name, ".nv.info.");
    if (Name == ".nv.shared.reserved.0") {
      ReservedPrefix = true;
    } else if (!Text.empty()) {
      BySymbol[static_cast<uint32_t>(S.sh_info & 0xffffff)] = std::string(Text);
      Here[std::string(Text)];
    } else if (!Shared.empty()) { // NOBITS: its size is not in the file
      SharedSection[std::string(Shared)] =
          static_cast<uint32_t>(std::min<uint64_t>(S.sh_size, ~0u));
    } else if (!NvInfo.empty() && inFile(S)) {
      KernelResources &R = Here[std::string(NvInfo)];
      forEachNvInfo(P + S.sh_offset, S.sh_size, [&](uint8_t Attr, const uint8_t *V, uint16_t Len) {
        if (Attr == kAttrMaxThreads && Len >= 12)
          R.MaxThreads = static_cast<uint32_t>(std::min<uint64_t>(
              uint64_t{load<uint32_t>(V)} * load<uint32_t>(V + 4) * load<uint32_t>(V + 8), ~0u));
      });
    } else if (Name == ".nv.info" && inFile(S)) {
      Info = S;
    }
  }
  if (Info)
    forEachNvInfo(P + Info->sh_offset, Info->sh_size,
                  [&](uint8_t Attr, const uint8_t *V, uint16_t Len) {
                    if ((Attr != kAttrRegCount && Attr != kAttrFrameSize) || Len < 8)
                      return;
                    auto K = BySymbol.find(load<uint32_t>(V));
                    if (K == BySymbol.end())
                      return;
                    KernelResources &R = Here[K->second];
                    (Attr == kAttrRegCount ? R.Registers : R.LocalBytes) = load<uint32_t>(V + 4);
                  });
  const int Arch = H.e_ident[EI_ABIVERSION] >= 8 ? static_cast<int>((H.e_flags >> 8) & 0xff)
                                                 : static_cast<int>(H.e_flags & 0xff);
  for (auto &[Name, R] : Here) {
    R.Arch = Arch;
    if (auto Sh = SharedSection.find(Name); Sh != SharedSection.end())
      R.SharedBytes =
          ReservedPrefix ? Sh->second - std::min(Sh->second, kReservedSharedPrefix) : Sh->second;
    auto [It, New] = Out.emplace(Name, R);
    if (!New && It->second.Arch != PreferArch && Arch == PreferArch)
      It->second = R;
  }
}

} // namespace

std::unordered_map<std::string, ParamLayout> readParamLayouts(const void *FatbinWrapper) {
  std::unordered_map<std::string, ParamLayout> Out;
  forEachCubin(FatbinWrapper, [&](const uint8_t *P, uint64_t Size) { readCubin(P, Size, Out); });
  return Out;
}

std::unordered_map<std::string, std::vector<uint8_t>> readGlobalInits(const void *FatbinWrapper) {
  std::unordered_map<std::string, std::vector<uint8_t>> Out;
  forEachCubin(FatbinWrapper,
               [&](const uint8_t *P, uint64_t Size) { readGlobalsOfCubin(P, Size, Out); });
  return Out;
}

std::unordered_map<std::string, KernelResources> readKernelResources(const void *FatbinWrapper,
                                                                     int PreferArch) {
  std::unordered_map<std::string, KernelResources> Out;
  forEachCubin(FatbinWrapper, [&](const uint8_t *P, uint64_t Size) {
    readResourcesOfCubin(P, Size, PreferArch, Out);
  });
  return Out;
}

bool paramInfo(const ParamLayout &L, size_t Index, size_t *Offset, size_t *Size) {
  if (Index >= L.Sizes.size())
    return false;
  size_t At = 0;
  if (L.Offsets.size() == L.Sizes.size()) {
    At = L.Offsets[Index];
  } else {
    for (size_t I = 0;; ++I) {
      size_t Align = 1;
      while (Align < 8 && L.Sizes[I] % (Align * 2) == 0)
        Align *= 2;
      At = (At + Align - 1) / Align * Align;
      if (I == Index)
        break;
      At += L.Sizes[I];
    }
  }
  if (Offset)
    *Offset = At;
  if (Size)
    *Size = L.Sizes[Index];
  return true;
}

} // namespace deepum::standin
