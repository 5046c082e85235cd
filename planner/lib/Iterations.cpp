//===- Iterations.cpp - Execution IDs, iterations, the reference iteration ---===//
#include "deepum/planner/Trace.h"

#include "deepum/base/Error.h"
#include "deepum/base/Hash.h"
#include "deepum/format/Signature.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <map>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::planner {

uint64_t sequenceFingerprint(ArrayRef<uint64_t> Ids) {
  uint64_t H = base::kFnvOffset;
  for (uint64_t Id : Ids)
    H = base::fnv1aId(Id, H);
  return H;
}

uint64_t contextId(ArrayRef<uint64_t> Ids, size_t P, unsigned Length) {
  uint64_t H = base::kFnvOffset;
  size_t N = Ids.size();
  for (unsigned K = 0; K < Length && K < N; ++K)
    H = base::fnv1aId(Ids[(P + N - K) % N], H);
  return H;
}

namespace {

/// Iteration starts from the period of the ID sequence, without marks.
/// An iteration begins where the opening n-gram of the profile recurs. Short
/// n-grams recur inside iterations too (repeated layers), so n doubles until
/// the recurrences stop changing; segments shorter than half the median
/// length are recurrences inside an iteration and are merged away.
std::vector<uint32_t> periodStarts(ArrayRef<uint64_t> Ids) {
  size_t L = Ids.size();
  std::vector<uint32_t> Best = {0};
  size_t PrevCount = 0;
  for (size_t Gram = 4; Gram <= 1024 && Gram * 2 <= L; Gram *= 2) {
    std::vector<uint32_t> Starts;
    for (size_t I = 0; I + Gram <= L; ++I)
      if (std::equal(Ids.begin() + I, Ids.begin() + I + Gram, Ids.begin()))
        Starts.push_back(static_cast<uint32_t>(I));
    if (Starts.size() < 2)
      break;
    std::vector<uint32_t> Lengths;
    for (size_t I = 1; I < Starts.size(); ++I)
      Lengths.push_back(Starts[I] - Starts[I - 1]);
    std::vector<uint32_t> Sorted = Lengths;
    std::sort(Sorted.begin(), Sorted.end());
    uint32_t Median = Sorted[Sorted.size() / 2];
    std::vector<uint32_t> Kept = {Starts[0]};
    for (size_t I = 1; I < Starts.size(); ++I)
      if (Starts[I] - Kept.back() >= Median / 2)
        Kept.push_back(Starts[I]);
    Best = Kept;
    if (Kept.size() == PrevCount)
      break;
    PrevCount = Kept.size();
  }
  return Best;
}

} // namespace

Expected<IterationAnalysis> analyzeIterations(const Profile &P) {
  IterationAnalysis A;
  if (P.kernels_size() == 0)
    return base::makeError("profile has no kernels");
  A.Ids.reserve(P.kernels_size());
  for (const Kernel &K : P.kernels())
    A.Ids.push_back(format::executionId(K));

  if (P.iterations_size() > 0) {
    A.FromMarks = true;
    uint64_t Covered = 0;
    for (const Iteration &It : P.iterations()) {
      A.Iterations.push_back({It.first_kernel(), It.kernel_count(), 0});
      Covered += It.kernel_count();
    }
    if (Covered < static_cast<uint64_t>(P.kernels_size()))
      A.Ignored.push_back(Twine(P.kernels_size() - Covered)
                              .concat(" kernels outside every marked iteration")
                              .str());
  } else {
    std::vector<uint32_t> Starts = periodStarts(A.Ids);
    if (Starts.front() != 0)
      A.Ignored.push_back(
          Twine(Starts.front()).concat(" kernels before the first iteration").str());
    for (size_t I = 0; I < Starts.size(); ++I) {
      uint32_t End = I + 1 < Starts.size() ? Starts[I + 1] : P.kernels_size();
      A.Iterations.push_back({Starts[I], End - Starts[I], 0});
    }
    if (Starts.size() == 1)
      A.Ignored.push_back("no iteration marks and no period in the kernel sequence: the whole "
                          "profile is planned as one iteration");
  }
  for (IterationSpan &S : A.Iterations)
    S.Fingerprint = sequenceFingerprint(ArrayRef<uint64_t>(A.Ids).slice(S.First, S.Count));

  // The modal sequence is the steady state; the others are noise.
  std::map<uint64_t, unsigned> Votes;
  for (const IterationSpan &S : A.Iterations)
    ++Votes[S.Fingerprint];
  uint64_t Mode = A.Iterations.back().Fingerprint;
  unsigned ModeVotes = 0;
  // Ties go to the later sequence: deepum-sim replays the last iteration.
  for (const IterationSpan &S : A.Iterations)
    if (Votes[S.Fingerprint] >= ModeVotes) {
      ModeVotes = Votes[S.Fingerprint];
      Mode = S.Fingerprint;
    }
  for (size_t I = A.Iterations.size(); I-- > 0;)
    if (A.Iterations[I].Fingerprint == Mode) {
      A.Reference = static_cast<uint32_t>(I);
      break;
    }
  const IterationSpan &Ref = A.Iterations[A.Reference];
  for (size_t I = 0; I < A.Iterations.size(); ++I) {
    const IterationSpan &S = A.Iterations[I];
    if (S.Fingerprint == Mode)
      continue;
    std::string What;
    if (S.Count < Ref.Count)
      What = (Twine(Ref.Count - S.Count) + " kernels fewer (cut short or missing launches)").str();
    else if (S.Count > Ref.Count)
      What = (Twine(S.Count - Ref.Count) + " extra kernels").str();
    else
      What = "a different kernel sequence";
    A.Ignored.push_back(("iteration " + Twine(I) + ": " + What +
                         " than the steady state; not used for the schedule")
                            .str());
  }
  return A;
}

} // namespace deepum::planner
