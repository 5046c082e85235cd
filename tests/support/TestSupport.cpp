//===- TestSupport.cpp - Helpers shared by deepum's unit tests --------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

using namespace deepum::v1;

namespace deepum::test {

static std::string envOr(const char *Name, const char *Fallback) {
  const char *V = std::getenv(Name);
  return V && *V ? V : Fallback;
}

std::string dataPath(const std::string &Name) {
  return envOr("DEEPUM_SOURCE_DIR", DEEPUM_SOURCE_DIR_DEFAULT) + "/tests/data/" + Name;
}

std::string scratchDir(const std::string &TestName) {
  std::string Dir =
      envOr("DEEPUM_BINARY_DIR", DEEPUM_BINARY_DIR_DEFAULT) + "/test-scratch/" + TestName;
  (void)llvm::sys::fs::remove_directories(Dir);
  (void)llvm::sys::fs::create_directories(Dir);
  return Dir;
}

const std::vector<std::string> &shippedModels() {
  static const std::vector<std::string> Models = {
      "resnet50",   "vgg16",      "vit_b_16", "bert-large",
      "gpt2-medium", "bart-large", "llama-1b", "llama-1b-ckpt"};
  return Models;
}

std::string shippedProfilePath(const std::string &Model) {
  return dataPath(Model + ".profile.pb.gz");
}

std::string testNameOf(const ::testing::TestParamInfo<std::string> &Info) {
  std::string Name = Info.param;
  for (char &C : Name)
    if (!std::isalnum(static_cast<unsigned char>(C)))
      C = '_';
  return Name;
}

ProfileBuilder::ProfileBuilder(std::string DeviceName) {
  P.set_format_version(deepum::format::kProfileFormatVersion);
  P.set_producer("deepum test ProfileBuilder");
  P.set_um_block_bytes(deepum::format::kUmBlockBytes);
  P.set_access_source(ACCESS_SOURCE_DERIVED_TRACE);
  P.mutable_device()->set_name(DeviceName);
  P.mutable_device()->set_memory_bytes(uint64_t{16} << 30);
  P.mutable_device()->set_link("pcie3x16");
  P.mutable_device()->set_link_bytes_per_second(12e9);
}

uint64_t ProfileBuilder::allocate(uint64_t Bytes, uint64_t AllocNs, int64_t FreeNs,
                                  AllocationRole Role, uint64_t Address) {
  Allocation *A = P.add_allocations();
  A->set_id(NextId++);
  A->set_size_bytes(Bytes);
  if (Address == 0) {
    Address = NextAddress;
    uint64_t B = deepum::format::kUmBlockBytes;
    NextAddress += (Bytes + B - 1) / B * B;
  }
  A->set_address(Address);
  A->set_alloc_time_ns(AllocNs);
  if (FreeNs >= 0) {
    A->set_freed(true);
    A->set_free_time_ns(static_cast<uint64_t>(FreeNs));
  }
  A->set_role(Role);
  return A->id();
}

int ProfileBuilder::kernel(const std::string &Name, uint64_t DurationNs,
                           std::initializer_list<Use> Uses) {
  return kernel(Name, DurationNs, std::vector<Use>(Uses));
}

static AccessMode mergeModes(AccessMode A, AccessMode B) {
  if (A == B)
    return A;
  if (A == ACCESS_MODE_UNSPECIFIED || B == ACCESS_MODE_UNSPECIFIED)
    return ACCESS_MODE_UNSPECIFIED;
  return ACCESS_MODE_READ_WRITE;
}

int ProfileBuilder::kernel(const std::string &Name, uint64_t DurationNs,
                           const std::vector<Use> &Uses) {
  Kernel *K = P.add_kernels();
  K->set_name(Name);
  K->mutable_grid()->set_x(1);
  K->mutable_grid()->set_y(1);
  K->mutable_grid()->set_z(1);
  K->mutable_block()->set_x(256);
  K->mutable_block()->set_y(1);
  K->mutable_block()->set_z(1);
  K->set_start_ns(Clock);
  K->set_end_ns(Clock + DurationNs);
  Clock += DurationNs;
  const uint64_t BlockBytes = deepum::format::kUmBlockBytes;
  const uint64_t PageBytes = deepum::format::kUmPageBytes;
  std::map<uint64_t, std::pair<uint32_t, AccessMode>> Blocks;
  for (const Use &U : Uses) {
    const Allocation *A = nullptr;
    for (const Allocation &Cand : P.allocations())
      if (Cand.id() == U.AllocationId)
        A = &Cand;
    if (!A) {
      ADD_FAILURE() << "ProfileBuilder: unknown allocation " << U.AllocationId;
      continue;
    }
    uint64_t Bytes = U.Bytes ? U.Bytes : A->size_bytes() - U.Offset;
    TensorAccess *T = K->add_tensors();
    T->set_allocation_id(U.AllocationId);
    T->set_offset(U.Offset);
    T->set_bytes(Bytes);
    T->set_mode(U.Mode);
    uint64_t Begin = A->address() + U.Offset, End = Begin + Bytes;
    for (uint64_t Page = Begin / PageBytes; Page * PageBytes < End; ++Page) {
      uint64_t Block = Page * PageBytes / BlockBytes;
      uint32_t Bit = uint32_t{1} << (Page % (BlockBytes / PageBytes));
      auto [It, New] = Blocks.try_emplace(Block, Bit, U.Mode);
      if (!New) {
        It->second.first |= Bit;
        It->second.second = mergeModes(It->second.second, U.Mode);
      }
    }
  }
  for (auto &[Block, MaskMode] : Blocks) {
    BlockAccess *B = K->add_blocks();
    B->set_block(Block);
    B->set_page_mask(MaskMode.first);
    B->set_mode(MaskMode.second);
  }
  return P.kernels_size() - 1;
}

void ProfileBuilder::iteration(uint32_t First, uint32_t Count) {
  Iteration *It = P.add_iterations();
  It->set_index(static_cast<uint32_t>(P.iterations_size() - 1));
  It->set_first_kernel(First);
  It->set_kernel_count(Count);
  It->set_start_ns(P.kernels(First).start_ns());
  It->set_end_ns(P.kernels(First + Count - 1).end_ns());
}

} // namespace deepum::test
