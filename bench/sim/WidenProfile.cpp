//===- WidenProfile.cpp - A profile made N times wider, for deepum-sim's speed ===//
//
// deepum-sim's cost grows with the iteration's kernels, blocks, allocations
// and block uses together. A real profile widened N times scales all four
// at once, as a larger batch or model does: every kernel becomes N kernels
// back to back (copy c after copy c-1, each as long as the original), each
// on its own copy of the data (addresses shifted by whole 2 MiB blocks, ids
// shifted), so the footprint, the allocations and the block uses are N
// times the original's and the access pattern of each copy is the
// original's. Allocations and frees keep their place among the launches of
// their copy. Fault, migration and UM-event records are dropped (the
// simulator does not read them).
//
//   deepum-sim-widen PROFILE --copies N -o OUT.profile.pb
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Format.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"

#include <algorithm>
#include <vector>

using namespace llvm;
using namespace deepum::v1;

static cl::OptionCategory Category("deepum-sim-widen options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<profile>"), cl::Required,
                                  cl::cat(Category));
static cl::opt<unsigned> Copies("copies", cl::desc("Copies of every kernel and allocation"),
                                cl::init(2), cl::cat(Category));
static cl::opt<std::string> Output("o", cl::desc("Profile to write"), cl::value_desc("FILE"),
                                   cl::Required, cl::cat(Category));

namespace {

/// Copy c's time for the original time T. Inside kernel k (s <= T < e) it
/// falls in copy c of k, which runs at N*s + c*(e-s); between kernels it is
/// N*T, after the last copy of the kernel before and before the first copy of
/// the kernel after (kernels run one after another).
class TimeMap {
public:
  TimeMap(const Profile &P, uint64_t Width) : N(Width) {
    for (const Kernel &K : P.kernels())
      Spans.push_back({K.start_ns(), K.end_ns()});
  }

  uint64_t operator()(uint64_t T, uint64_t Copy) const {
    auto It = std::upper_bound(Spans.begin(), Spans.end(), std::pair{T, UINT64_MAX});
    if (It != Spans.begin() && T < std::prev(It)->second) {
      const auto [S, E] = *std::prev(It);
      return N * S + Copy * (E - S) + (T - S);
    }
    return N * T;
  }

private:
  uint64_t N;
  std::vector<std::pair<uint64_t, uint64_t>> Spans; // kernels' [start, end), by start
};

Error widen() {
  if (Copies == 0)
    return createStringError(inconvertibleErrorCode(), "--copies must be at least 1");
  Expected<Profile> POr = deepum::format::readProfile(Input);
  if (!POr)
    return POr.takeError();
  const Profile &P = *POr;
  const uint64_t N = Copies;
  const uint64_t BlockBytes = deepum::format::kUmBlockBytes;
  for (int K = 1; K < P.kernels_size(); ++K)
    if (P.kernels(K).start_ns() < P.kernels(K - 1).end_ns())
      return createStringError(inconvertibleErrorCode(),
                               "%s: kernel %d starts before kernel %d ends: widening needs "
                               "kernels that run one after another",
                               Input.c_str(), K, K - 1);
  uint64_t Low = UINT64_MAX, High = 0, MaxId = 0, LastNs = 0;
  for (const Allocation &A : P.allocations()) {
    Low = std::min(Low, A.address());
    High = std::max(High, A.address() + A.size_bytes());
    MaxId = std::max(MaxId, A.id());
  }
  for (const Kernel &K : P.kernels())
    LastNs = std::max(LastNs, K.end_ns());
  for (const Allocation &A : P.allocations())
    LastNs = std::max(LastNs, std::max(A.alloc_time_ns(), A.free_time_ns()));
  // Each copy's data one span further on, in whole blocks: page masks and
  // which allocations share a block stay as they were.
  const uint64_t Span = P.allocations_size() == 0
                            ? BlockBytes
                            : (High - Low / BlockBytes * BlockBytes + BlockBytes - 1) /
                                  BlockBytes * BlockBytes;
  if (High > UINT64_MAX - (N - 1) * Span || MaxId >= UINT64_MAX / N ||
      LastNs >= UINT64_MAX / N || uint64_t(P.kernels_size()) * N > INT32_MAX)
    return createStringError(inconvertibleErrorCode(),
                             "%s: %u copies would run past 2^64 in addresses, ids or time, or past 2^31 kernels",
                             Input.c_str(), Copies.getValue());
  const uint64_t IdStride = MaxId + 1;
  const TimeMap Map(P, N);

  Profile Out = P;
  Out.clear_allocations();
  Out.clear_kernels();
  Out.clear_iterations();
  Out.clear_faults();
  Out.clear_migrations();
  Out.clear_um_events();
  Out.mutable_workload()->set_notes(
      formatv("{0} widened {1} times (bench/sim/WidenProfile.cpp)", P.workload().model(), N)
          .str());
  for (uint64_t C = 0; C < N; ++C)
    for (const Allocation &A : P.allocations()) {
      Allocation *W = Out.add_allocations();
      *W = A;
      W->set_id(A.id() + C * IdStride);
      W->set_address(A.address() + C * Span);
      W->set_alloc_time_ns(Map(A.alloc_time_ns(), C));
      if (A.freed())
        W->set_free_time_ns(Map(A.free_time_ns(), C));
      if (A.call_index())
        W->set_call_index((A.call_index() - 1) * N + C + 1);
    }
  for (const Kernel &K : P.kernels())
    for (uint64_t C = 0; C < N; ++C) {
      Kernel *W = Out.add_kernels();
      *W = K;
      const uint64_t Ns = K.end_ns() - K.start_ns();
      W->set_start_ns(N * K.start_ns() + C * Ns);
      W->set_end_ns(W->start_ns() + Ns);
      for (BlockAccess &B : *W->mutable_blocks())
        B.set_block(B.block() + C * (Span / BlockBytes));
      for (TensorAccess &T : *W->mutable_tensors())
        T.set_allocation_id(T.allocation_id() + C * IdStride);
    }
  for (const Iteration &I : P.iterations()) {
    Iteration *W = Out.add_iterations();
    *W = I;
    W->set_first_kernel(static_cast<uint32_t>(I.first_kernel() * N));
    W->set_kernel_count(static_cast<uint32_t>(I.kernel_count() * N));
    W->set_start_ns(Map(I.start_ns(), 0));
    W->set_end_ns(Map(I.end_ns(), N - 1));
  }
  return deepum::format::writeProfile(Out, Output, {Input});
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  cl::ParseCommandLineOptions(argc, argv, "widen a profile N times (deepum-sim's speed)\n");
  ExitOnError ExitOnErr("deepum-sim-widen: ");
  ExitOnErr(widen());
  return 0;
}
