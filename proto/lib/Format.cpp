//===- Format.cpp - Read and write profiles and plans -----------------------===//
#include "deepum/format/Format.h"
#include "deepum/base/Error.h"
#include "deepum/format/PlanWire.h"
#include "deepum/format/Units.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver_util.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include <unistd.h>

using namespace llvm;

namespace deepum::format {
namespace {

/// Every error of this library goes through here: the file's name and the
/// message (which may quote names from the file) are escaped, so the error
/// stays one line whatever the input holds.
Error fileError(StringRef Name, const Twine &Msg) {
  return base::fileError(escapeForMessage(Name), escapeForMessage(Msg.str()));
}

/// "1 GiB", "256 KiB" for the round caps; formatBytes otherwise.
std::string sizeText(uint64_t Bytes) {
  static const char *Units[] = {"KiB", "MiB", "GiB", "TiB"};
  for (int U = 3; U >= 0; --U) {
    uint64_t Unit = uint64_t{1} << (10 * (U + 1));
    if (Bytes >= Unit && Bytes % Unit == 0)
      return std::to_string(Bytes / Unit) + " " + Units[U];
  }
  return formatBytes(Bytes);
}

/// libprotobuf logs some parse problems to stderr by itself (the text-format
/// parser does, for one); our readers report each problem once, in their own
/// error line, so its log lines are dropped. A fatal message is still shown:
/// libprotobuf stops the process right after it, and the message says why.
void dropProtobufLog(google::protobuf::LogLevel Level, const char *File, int Line,
                     const std::string &Message) {
  if (Level == google::protobuf::LOGLEVEL_FATAL)
    std::fprintf(stderr, "libprotobuf FATAL %s:%d: %s\n", File, Line,
                 escapeForMessage(Message).c_str());
}

/// Installed on first use of protobuf by this library, not at load time:
/// a program that links the library without reading files keeps its handler.
void routeProtobufLogs() {
  static const bool Installed = [] {
    google::protobuf::SetLogHandler(dropProtobufLog);
    return true;
  }();
  (void)Installed;
}

/// The text-format parser's first error, for the error line.
class FirstTextFormatError : public google::protobuf::io::ErrorCollector {
public:
  std::string Text;
  void AddError(int Line, google::protobuf::io::ColumnNumber Column,
                const std::string &Message) override {
    if (Text.empty())
      Text = formatv("line {0} column {1}: {2}", Line + 1, Column + 1, Message).str();
  }
};

bool isGzip(StringRef Bytes) {
  return Bytes.size() >= 2 && static_cast<unsigned char>(Bytes[0]) == 0x1f &&
         static_cast<unsigned char>(Bytes[1]) == 0x8b;
}

/// Strict gzip: one member (as deepum writes and libdeepum's plan reader
/// reads), its CRC and length checked by zlib, nothing after it. The output
/// never grows past `Limit`: each chunk is checked before it is appended.
Expected<std::string> gunzip(StringRef Bytes, StringRef Name, uint64_t Limit) {
  z_stream Z;
  std::memset(&Z, 0, sizeof(Z));
  // 15 window bits + 16: a gzip header and trailer only (no zlib, no raw deflate).
  if (inflateInit2(&Z, 15 + 16) != Z_OK)
    return fileError(Name, "cannot initialise decompression");
  auto End = make_scope_exit([&] { inflateEnd(&Z); });
  const char *Next = Bytes.data();
  size_t Left = Bytes.size();
  // avail_in is 32 bits: feed the input in slices.
  auto Feed = [&] {
    if (Z.avail_in != 0 || Left == 0)
      return;
    size_t N = std::min<size_t>(Left, size_t{1} << 30);
    Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(Next));
    Z.avail_in = static_cast<uInt>(N);
    Next += N;
    Left -= N;
  };
  std::string Out;
  // The trailer's length (mod 2^32) is a hint for the buffer, never trusted for the cap.
  if (Bytes.size() >= 18) {
    const auto *T = reinterpret_cast<const unsigned char *>(Bytes.end() - 4);
    uint64_t Hint = T[0] | T[1] << 8 | T[2] << 16 | uint64_t{T[3]} << 24;
    if (Hint <= Limit)
      Out.reserve(Hint);
  }
  char Chunk[1 << 16];
  while (true) {
    Feed();
    Z.next_out = reinterpret_cast<Bytef *>(Chunk);
    Z.avail_out = sizeof(Chunk);
    int Rc = inflate(&Z, Z_NO_FLUSH);
    if (Rc != Z_OK && Rc != Z_STREAM_END && Rc != Z_BUF_ERROR)
      return fileError(Name, Twine("corrupt gzip data (") + (Z.msg ? Z.msg : "zlib error") + ")");
    size_t Got = sizeof(Chunk) - Z.avail_out;
    if (Got > Limit - Out.size())
      return fileError(Name,
                       "decompresses to more than " + sizeText(Limit) + "; refusing to read it");
    Out.append(Chunk, Got);
    if (Rc == Z_STREAM_END)
      break;
    // No progress possible, or all input consumed with room left for output.
    if (Rc == Z_BUF_ERROR || (Z.avail_in == 0 && Left == 0 && Z.avail_out != 0))
      return fileError(Name, "truncated gzip data");
  }
  size_t Rest = Z.avail_in + Left;
  if (Rest == 0)
    return Out;
  if (isGzip(Bytes.take_back(Rest)))
    return fileError(Name, "a second gzip member follows the first (concatenated gzip files "
                           "are not read: decompress and compress it again as one)");
  return fileError(Name, Twine(Rest) + " bytes of trailing garbage after the gzip data");
}

/// The refusal of a message whose estimated cost passes readMemoryBound,
/// naming the field that costs most; success otherwise.
Error checkReadCost(const ReadCost &Cost, uint64_t Bytes, StringRef Name) {
  uint64_t Bound = readMemoryBound(Bytes);
  if (Cost.Bytes <= Bound)
    return Error::success();
  const google::protobuf::FieldDescriptor *Top = nullptr;
  ReadCost::Tally Most;
  for (const auto &[F, T] : Cost.Fields)
    if (T.Bytes > Most.Bytes) {
      Top = F;
      Most = T;
    }
  std::string Holds =
      Top ? formatv("holds at least {0} {1}{2}, which", Most.Elements,
                    Top->containing_type()->name() == "Profile" ||
                            Top->containing_type()->name() == "Plan"
                        ? ""
                        : Top->containing_type()->name() + ".",
                    Top->name())
                .str()
          : std::string("holds more fields than it can");
  // At least: the walk stops once the bound is passed.
  return fileError(Name, formatv("{0} would take at least {1} once read, more than {2} times its "
                                 "{3} plus {4}; refusing it",
                                 Holds, formatBytes(Cost.Bytes), kReadMemoryFactor,
                                 formatBytes(Bytes), sizeText(kReadMemorySlackBytes))
                             .str());
}

/// Text format has no lengths to walk, so its cost is bounded from above by
/// counting: every '{' or '<' may open the largest message of the schema,
/// every ':', ',' or '[' may start a repeated scalar, every quote a string.
/// A coarse bound, but text files are hand-written fixtures.
ReadCost textReadCost(StringRef Bytes, const google::protobuf::Descriptor &Type) {
  uint64_t Largest = 0;
  std::vector<const google::protobuf::Descriptor *> Todo{&Type}, Seen;
  while (!Todo.empty()) {
    const google::protobuf::Descriptor *D = Todo.back();
    Todo.pop_back();
    if (llvm::is_contained(Seen, D))
      continue;
    Seen.push_back(D);
    if (const auto *Proto = google::protobuf::MessageFactory::generated_factory()->GetPrototype(D))
      Largest = std::max<uint64_t>(Largest, Proto->SpaceUsedLong());
    for (int I = 0; I < D->field_count(); ++I)
      if (const google::protobuf::Descriptor *Sub = D->field(I)->message_type())
        Todo.push_back(Sub);
  }
  uint64_t Opens = 0, Values = 0, Quotes = 0;
  for (char C : Bytes) {
    Opens += C == '{' || C == '<';
    Values += C == ':' || C == ',' || C == '[';
    Quotes += C == '"' || C == '\'';
  }
  ReadCost Cost;
  Cost.Bytes = Opens * (Largest + 32) + Values * 16 + Quotes * 24;
  return Cost;
}

/// Refuses, before protobuf builds anything, a file whose message would cost
/// more than readMemoryBound of its bytes.
Error checkParseCost(StringRef Bytes, StringRef Name, Encoding Enc,
                     const google::protobuf::Descriptor &Type) {
  uint64_t Bound = readMemoryBound(Bytes.size());
  switch (Enc) {
  case Encoding::Binary:
    return checkReadCost(estimateReadCost(Bytes, Type, Bound), Bytes.size(), Name);
  case Encoding::Text:
    return checkReadCost(textReadCost(Bytes, Type), Bytes.size(), Name);
  case Encoding::Json: {
    // The binary form the JSON parser builds on its way: walked like a binary
    // file, but against the JSON's own size. Malformed JSON is left to the
    // parser's error.
    std::unique_ptr<google::protobuf::util::TypeResolver> Resolver(
        google::protobuf::util::NewTypeResolverForDescriptorPool(
            "type.googleapis.com", google::protobuf::DescriptorPool::generated_pool()));
    std::string Wire;
    if (!google::protobuf::util::JsonToBinaryString(Resolver.get(),
                                                    "type.googleapis.com/" + Type.full_name(),
                                                    std::string(Bytes), &Wire)
             .ok())
      return Error::success();
    return checkReadCost(estimateReadCost(Wire, Type, Bound), Bytes.size(), Name);
  }
  }
  return Error::success();
}

/// Parses into M, which may live on a protobuf arena.
template <typename Msg>
Error parseMessageInto(StringRef Bytes, StringRef Name, Encoding Enc, StringRef What, Msg &M) {
  routeProtobufLogs();
  if (Bytes.empty())
    return fileError(Name, Twine("empty file, not a ") + What);
  if (Error E = checkParseCost(Bytes, Name, Enc, *Msg::descriptor()))
    return E;
  switch (Enc) {
  case Encoding::Binary: {
    if (Bytes.size() > static_cast<size_t>(INT32_MAX))
      return fileError(Name, "larger than 2 GiB, the protobuf limit for one message");
    google::protobuf::io::CodedInputStream In(reinterpret_cast<const uint8_t *>(Bytes.data()),
                                              static_cast<int>(Bytes.size()));
    In.SetTotalBytesLimit(INT32_MAX);
    if (!M.ParseFromCodedStream(&In) || !In.ConsumedEntireMessage())
      return fileError(Name, Twine("not a deepum ") + What +
                                 " (protobuf parse failed: truncated, corrupt or another format)");
    // Reading garbage as protobuf often "succeeds" with only unknown fields.
    std::vector<const google::protobuf::FieldDescriptor *> Known;
    M.GetReflection()->ListFields(M, &Known);
    if (Known.empty())
      return fileError(Name, Twine("not a deepum ") + What + " (no known fields)");
    break;
  }
  case Encoding::Text: {
    google::protobuf::TextFormat::Parser Parser;
    FirstTextFormatError Errors;
    Parser.RecordErrorsTo(&Errors);
    if (!Parser.ParseFromString(std::string(Bytes), &M))
      return fileError(Name, Twine("not a deepum ") + What + " in protobuf text format" +
                                 (Errors.Text.empty() ? "" : " (" + Errors.Text + ")"));
    break;
  }
  case Encoding::Json: {
    auto St = google::protobuf::util::JsonStringToMessage(std::string(Bytes), &M);
    if (!St.ok())
      return fileError(Name,
                       Twine("not a deepum ") + What + " in JSON: " + St.message().ToString());
    break;
  }
  }
  if (Enc != Encoding::Binary) {
    // The text and JSON parsers accept strings that are not UTF-8, which the
    // binary reader (protobuf's and libdeepum's) refuses: a message read here
    // must read again once converted, so it goes through the binary form.
    std::string Wire;
    Msg Again;
    if (!M.SerializeToString(&Wire) || !Again.ParseFromString(Wire))
      return fileError(Name,
                       Twine("not a deepum ") + What + " (a string field is not valid UTF-8)");
  }
  return Error::success();
}

template <typename Msg>
Expected<Msg> parseMessage(StringRef Bytes, StringRef Name, Encoding Enc, StringRef What) {
  Msg M;
  if (Error E = parseMessageInto(Bytes, Name, Enc, What, M))
    return E;
  return M;
}

template <typename Msg>
Error writeMessage(const Msg &M, StringRef Path, StringRef What, ArrayRef<StringRef> Inputs) {
  routeProtobufLogs();
  std::string Bytes;
  switch (encodingForPath(Path)) {
  case Encoding::Binary:
    if (!M.SerializeToString(&Bytes))
      return fileError(Path, Twine("cannot serialise the ") + What);
    break;
  case Encoding::Text:
    Bytes = toText(M);
    break;
  case Encoding::Json:
    Bytes = toJson(M);
    break;
  }
  if (Path.endswith(".gz")) {
    z_stream Z;
    std::memset(&Z, 0, sizeof(Z));
    // 15 window bits + 16: write a gzip header; level 9 keeps shipped fixtures small.
    if (deflateInit2(&Z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return fileError(Path, "cannot initialise compression");
    std::string Out(deflateBound(&Z, Bytes.size()), '\0');
    Z.next_in = reinterpret_cast<Bytef *>(Bytes.data());
    Z.avail_in = static_cast<uInt>(Bytes.size());
    Z.next_out = reinterpret_cast<Bytef *>(Out.data());
    Z.avail_out = static_cast<uInt>(Out.size());
    int Rc = deflate(&Z, Z_FINISH);
    Out.resize(Z.total_out);
    deflateEnd(&Z);
    if (Rc != Z_STREAM_END)
      return fileError(Path, "compression failed");
    Bytes = std::move(Out);
  }
  return writeFileAtomically(Path, Bytes, Inputs);
}

/// Follows `Path` while it is a symbolic link (a dangling one too), as
/// open(O_CREAT) would: the result names the file to replace. Relative links
/// are joined to the link's own directory, never normalised, so ".." means
/// what it meant to the kernel.
Expected<std::string> resolveSymlinks(StringRef Path) {
  SmallString<256> P(Path);
  for (int Hops = 0; Hops < 40; ++Hops) { // 40: Linux's own limit (MAXSYMLINKS)
    sys::fs::file_status St;
    if (sys::fs::status(P, St, /*Follow=*/false) || !sys::fs::is_symlink_file(St))
      return std::string(P);
    char Buf[PATH_MAX];
    ssize_t N = ::readlink(P.c_str(), Buf, sizeof(Buf));
    if (N < 0 || N == static_cast<ssize_t>(sizeof(Buf)))
      return fileError(Path, "cannot read the symbolic link " + P);
    StringRef Link(Buf, static_cast<size_t>(N));
    if (sys::path::is_absolute(Link)) {
      P = Link;
      continue;
    }
    SmallString<256> Next(sys::path::parent_path(P));
    sys::path::append(Next, Link);
    P = Next;
  }
  return fileError(Path, "too many levels of symbolic links");
}

/// Writes to FD and closes it; the error message, or "" on success.
std::string writeAndClose(int FD, function_ref<void(raw_ostream &)> Write) {
  raw_fd_ostream OS(FD, /*shouldClose=*/true);
  Write(OS);
  OS.close();
  if (!OS.has_error())
    return "";
  std::string Msg = OS.error().message();
  OS.clear_error();
  return Msg;
}

/// A device, FIFO or socket: opened and written, never replaced.
Error writeInPlace(StringRef Path, StringRef Target, function_ref<void(raw_ostream &)> Text) {
  int FD = -1;
  if (std::error_code EC =
          sys::fs::openFileForWrite(Target, FD, sys::fs::CD_OpenExisting, sys::fs::OF_None))
    return fileError(Path, "cannot open it for writing: " + EC.message());
  std::string Msg = writeAndClose(FD, Text);
  if (!Msg.empty())
    return fileError(Path, "write failed: " + Msg);
  return Error::success();
}

/// A regular or new file: a temporary file beside it, renamed into place.
Error writeByRename(StringRef Path, StringRef Target, function_ref<void(raw_ostream &)> Text,
                    Optional<sys::fs::perms> KeepPerms) {
  SmallString<256> Tmp;
  int FD = -1;
  StringRef Dir = sys::path::parent_path(Target);
  SmallString<256> Model(Dir.empty() ? "." : Dir);
  sys::path::append(Model, sys::path::filename(Target) + ".tmp-%%%%%%");
  if (std::error_code EC = sys::fs::createUniqueFile(Model, FD, Tmp))
    return fileError(Path, "cannot create a temporary file beside it: " + EC.message());
  if (KeepPerms)
    (void)sys::fs::setPermissions(FD, *KeepPerms); // best effort, as cp does
  std::string Msg = writeAndClose(FD, Text);
  if (!Msg.empty()) {
    (void)sys::fs::remove(Tmp);
    return fileError(Path, "write failed: " + Msg);
  }
  if (std::error_code EC = sys::fs::rename(Tmp, Target)) {
    (void)sys::fs::remove(Tmp);
    return fileError(Path, "cannot rename the temporary file into place: " + EC.message());
  }
  return Error::success();
}

} // namespace

Encoding encodingForPath(StringRef Path) {
  StringRef P = Path;
  if (P.endswith(".gz"))
    P = P.drop_back(3);
  if (P.endswith(".json"))
    return Encoding::Json;
  if (P.endswith(".txtpb") || P.endswith(".textproto") || P.endswith(".pbtxt"))
    return Encoding::Text;
  return Encoding::Binary;
}

Expected<std::string> readFileBytes(StringRef Path, const ReadLimits &Limits) {
  sys::fs::file_t FD = 0; // standard input for "-"
  bool Close = false;
  if (Path != "-") {
    Expected<sys::fs::file_t> F = sys::fs::openNativeFileForRead(Path);
    if (!F)
      return fileError(Path, errorToErrorCode(F.takeError()).message());
    FD = *F;
    Close = true;
  }
  auto CloseFile = make_scope_exit([&] {
    if (Close)
      (void)sys::fs::closeFile(FD);
  });
  // The open file's status, not the name's: what is read is what was checked.
  sys::fs::file_status St;
  if (std::error_code EC = sys::fs::status(FD, St))
    return fileError(Path, EC.message());
  if (sys::fs::is_directory(St))
    return fileError(Path, "is a directory");
  // Standard input, pipes and devices have no size beforehand: read in chunks, capped.
  bool Regular = sys::fs::is_regular_file(St);
  uint64_t Limit = Regular ? Limits.FileBytes : Limits.StreamBytes;
  auto TooLarge = [&] {
    return fileError(Path, Regular ? "larger than " + sizeText(Limit) + "; refusing to read it"
                                   : "more than " + sizeText(Limit) +
                                         " from a pipe or device; refusing to read it");
  };
  if (Regular && St.getSize() > Limit)
    return TooLarge();
  constexpr size_t kChunk = size_t{1} << 20;
  std::string Bytes;
  if (Regular)
    Bytes.reserve(St.getSize());
  auto Read = [&](char *To, size_t Want) -> Expected<size_t> {
    Expected<size_t> Got = sys::fs::readNativeFile(FD, MutableArrayRef<char>(To, Want));
    if (!Got)
      return fileError(Path, "read failed: " + errorToErrorCode(Got.takeError()).message());
    return Got;
  };
  bool AtEnd = false;
  while (!AtEnd && Bytes.size() < Limit) {
    size_t Old = Bytes.size();
    size_t Want = static_cast<size_t>(std::min<uint64_t>(kChunk, Limit - Old));
    Bytes.resize(Old + Want);
    Expected<size_t> Got = Read(&Bytes[Old], Want);
    if (!Got)
      return Got.takeError();
    Bytes.resize(Old + *Got);
    AtEnd = *Got == 0;
  }
  // One byte past the cap proves the input is over it; read aside, so the
  // buffer never grows past the cap.
  if (!AtEnd) {
    char Probe;
    Expected<size_t> Got = Read(&Probe, 1);
    if (!Got)
      return Got.takeError();
    if (*Got != 0)
      return TooLarge();
  }
  if (isGzip(Bytes))
    return gunzip(Bytes, Path, Limits.DecompressedBytes);
  return Bytes;
}

Expected<deepum::v1::Profile> parseProfile(StringRef Bytes, StringRef Name, Encoding Enc) {
  auto P = parseMessage<deepum::v1::Profile>(Bytes, Name, Enc, "profile");
  if (!P)
    return P.takeError();
  if (Error E = validateProfile(*P))
    return fileError(Name, toString(std::move(E)));
  return P;
}

Expected<deepum::v1::Plan> parsePlan(StringRef Bytes, StringRef Name, Encoding Enc) {
  auto P = parseMessage<deepum::v1::Plan>(Bytes, Name, Enc, "plan");
  if (!P)
    return P.takeError();
  if (Error E = validatePlan(*P))
    return fileError(Name, toString(std::move(E)));
  return P;
}

Expected<deepum::v1::Profile> readProfile(StringRef Path) {
  auto Bytes = readFileBytes(Path);
  if (!Bytes)
    return Bytes.takeError();
  return parseProfile(*Bytes, Path, encodingForPath(Path));
}

Error readProfileInto(StringRef Path, deepum::v1::Profile &P) {
  auto Bytes = readFileBytes(Path);
  if (!Bytes)
    return Bytes.takeError();
  if (Error E = parseMessageInto(*Bytes, Path, encodingForPath(Path), "profile", P))
    return E;
  if (Error E = validateProfile(P))
    return fileError(Path, toString(std::move(E)));
  return Error::success();
}

Expected<deepum::v1::Plan> readPlan(StringRef Path) {
  // libdeepum's cap for plans (deepum/format/PlanWire.h), so that a plan this
  // reads is one a training process loads.
  ReadLimits Limits;
  Limits.FileBytes = Limits.StreamBytes = Limits.DecompressedBytes = PlanLimits::kMaxFileBytes;
  auto Bytes = readFileBytes(Path, Limits);
  if (!Bytes)
    return Bytes.takeError();
  return parsePlan(*Bytes, Path, encodingForPath(Path));
}

Error writeProfile(const deepum::v1::Profile &P, StringRef Path, ArrayRef<StringRef> Inputs) {
  return writeMessage(P, Path, "profile", Inputs);
}

Error writePlan(const deepum::v1::Plan &P, StringRef Path, ArrayRef<StringRef> Inputs) {
  return writeMessage(P, Path, "plan", Inputs);
}

std::string toJson(const google::protobuf::Message &M) {
  routeProtobufLogs();
  std::string Out;
  google::protobuf::util::JsonPrintOptions Opts;
  Opts.add_whitespace = true;
  Opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(M, &Out, Opts);
  return Out;
}

std::string toText(const google::protobuf::Message &M) {
  routeProtobufLogs();
  std::string Out;
  google::protobuf::TextFormat::PrintToString(M, &Out);
  return Out;
}

Expected<FileKind> detectFileKind(StringRef Path, StringRef Bytes) {
  StringRef Name = sys::path::filename(Path);
  if (Name.contains(".plan."))
    return FileKind::Plan;
  if (Name.contains(".profile."))
    return FileKind::Profile;
  // Both messages start with format_version; a profile has a device (field 3,
  // a message) or kernels, a plan has metadata (field 2, a message).
  Encoding Enc = encodingForPath(Path);
  if (Enc != Encoding::Binary) {
    if (Bytes.contains("metadata") || Bytes.contains("position_ids"))
      return FileKind::Plan;
    return FileKind::Profile;
  }
  routeProtobufLogs();
  // Each trial parse only when the message fits the reader's bound; a file
  // that is neither, and too costly as one of them, is refused for its cost.
  const google::protobuf::Descriptor &ProfType = *deepum::v1::Profile::descriptor();
  const google::protobuf::Descriptor &PlanType = *deepum::v1::Plan::descriptor();
  uint64_t Bound = readMemoryBound(Bytes.size());
  bool ProfFits = estimateReadCost(Bytes, ProfType, Bound).Bytes <= Bound;
  bool PlanFits = estimateReadCost(Bytes, PlanType, Bound).Bytes <= Bound;
  if (ProfFits) {
    deepum::v1::Profile Prof;
    if (Prof.ParseFromArray(Bytes.data(), static_cast<int>(Bytes.size())) &&
        Prof.GetReflection()->GetUnknownFields(Prof).empty() && Prof.kernels_size() > 0)
      return FileKind::Profile;
  }
  if (PlanFits) {
    deepum::v1::Plan Plan;
    if (Plan.ParseFromArray(Bytes.data(), static_cast<int>(Bytes.size())) &&
        Plan.GetReflection()->GetUnknownFields(Plan).empty() && Plan.has_metadata())
      return FileKind::Plan;
  }
  if (!ProfFits)
    return checkParseCost(Bytes, Path, Encoding::Binary, ProfType);
  if (!PlanFits)
    return checkParseCost(Bytes, Path, Encoding::Binary, PlanType);
  return fileError(Path, "neither a deepum profile nor a deepum plan (name it *.profile.pb or "
                         "*.plan.pb to say which)");
}

Error checkNotAnInput(StringRef Output, ArrayRef<StringRef> Inputs) {
  sys::fs::file_status Out;
  if (Output == "-" || sys::fs::status(Output, Out) || !sys::fs::is_regular_file(Out))
    return Error::success();
  for (StringRef In : Inputs) {
    sys::fs::file_status St;
    std::error_code EC = In == "-" ? sys::fs::status(0, St) : sys::fs::status(In, St);
    if (!EC && sys::fs::is_regular_file(St) && sys::fs::equivalent(Out, St))
      return fileError(Output, "is the input file " + (In == "-" ? "(standard input)" : In) +
                                   "; refusing to overwrite it");
  }
  return Error::success();
}

std::string escapeForMessage(StringRef Text) {
  std::string Out;
  Out.reserve(Text.size());
  auto Hex = [&](unsigned char C) {
    static const char Digits[] = "0123456789abcdef";
    Out += "\\x";
    Out += Digits[C >> 4];
    Out += Digits[C & 15];
  };
  for (size_t I = 0; I < Text.size();) {
    auto C = static_cast<unsigned char>(Text[I]);
    if (C >= 0x20 && C < 0x7f) {
      Out += static_cast<char>(C);
      ++I;
      continue;
    }
    if (C < 0x80) {
      switch (C) {
      case '\n':
        Out += "\\n";
        break;
      case '\r':
        Out += "\\r";
        break;
      case '\t':
        Out += "\\t";
        break;
      default:
        Hex(C);
      }
      ++I;
      continue;
    }
    // UTF-8: a well-formed sequence (no overlongs, surrogates or values past
    // U+10FFFF) passes unless it is a C1 control (U+0080..U+009F).
    size_t Len = C >= 0xc2 && C <= 0xdf   ? 2
                 : C >= 0xe0 && C <= 0xef ? 3
                 : C >= 0xf0 && C <= 0xf4 ? 4
                                          : 0;
    bool Ok = Len != 0 && I + Len <= Text.size();
    for (size_t K = 1; Ok && K < Len; ++K)
      Ok = (static_cast<unsigned char>(Text[I + K]) & 0xc0) == 0x80;
    if (Ok && Len >= 3) {
      auto C1 = static_cast<unsigned char>(Text[I + 1]);
      Ok = !(C == 0xe0 && C1 < 0xa0) && !(C == 0xed && C1 >= 0xa0) && !(C == 0xf0 && C1 < 0x90) &&
           !(C == 0xf4 && C1 >= 0x90);
    }
    if (Ok && C == 0xc2 && static_cast<unsigned char>(Text[I + 1]) < 0xa0)
      Ok = false; // C1 control
    if (!Ok) {
      Hex(C);
      ++I;
      continue;
    }
    Out.append(Text.data() + I, Len);
    I += Len;
  }
  return Out;
}

Error writeFileAtomically(StringRef Path, StringRef Text, ArrayRef<StringRef> Inputs) {
  return writeFileAtomically(
      Path, [&](raw_ostream &OS) { OS << Text; }, Inputs);
}

Error writeFileAtomically(StringRef Path, function_ref<void(raw_ostream &)> Text,
                          ArrayRef<StringRef> Inputs) {
  if (Path == "-") {
    Text(outs());
    outs().flush();
    return Error::success();
  }
  if (Error E = checkNotAnInput(Path, Inputs))
    return E;
  Expected<std::string> Target = resolveSymlinks(Path);
  if (!Target)
    return Target.takeError();
  sys::fs::file_status St;
  if (sys::fs::status(*Target, St, /*Follow=*/false))
    return writeByRename(Path, *Target, Text, None); // a new file (or an error there)
  if (sys::fs::is_directory(St))
    return fileError(Path, "is a directory");
  if (!sys::fs::is_regular_file(St))
    return writeInPlace(Path, *Target, Text);
  return writeByRename(Path, *Target, Text, St.permissions());
}

} // namespace deepum::format
