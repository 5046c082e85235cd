//===- CallAlignment.h - Live allocation calls against the profiled ones --===//
//
// A plan places what a process allocates before its reference iteration
// (parameters, gradients, optimizer state) by call index: the N-th allocation
// call of the replay is the N-th of the profiled run. A replay can make one
// call more or fewer (an autotuner's workspace, a lazily made buffer); from
// there every index would name another allocation, and sizes alone are
// ambiguous (an activation of the first step can have a gradient's size).
//
// When the plan lists the size of every profiled call before its reference
// iteration, CallAlignment keeps the offset between live and profiled
// indices. A call whose size differs from the profiled call it stands for is
// a departure: placement stops (the calls go to the pool) until the last
// kConfirm calls agree, size for size, with the profiled calls at exactly one
// offset within kReach of the old one. Runs of equal sizes agree at many
// offsets and re-align nothing: a guess could place a transient buffer where
// the profile had a gradient. Without the list the offset stays 0 (exact
// call indices), and a departure that keeps the sizes goes unseen.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_LIB_CALLALIGNMENT_H
#define DEEPUM_EXECUTOR_LIB_CALLALIGNMENT_H

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>

namespace deepum::executor::detail {

class CallAlignment {
public:
  /// Calls that must agree with the profiled ones before placement resumes.
  static constexpr unsigned kConfirm = 6;
  /// How far from the old offset a new one is looked for, in calls.
  static constexpr int64_t kReach = 16;

  struct Where {
    uint64_t Call = 0;    ///< the profiled call index it stands for (0: before the first)
    bool Aligned = true;  ///< whether it may be placed by that index
    bool Departed = false; ///< this call broke the alignment
    bool Realigned = false; ///< this call restored it (at a new offset)
  };

  /// The live call `Call` (1 = the process's first) of `Bytes`, against the
  /// profiled calls' sizes (element k: call k + 1; 0 = not recorded).
  Where observe(std::span<const uint64_t> Sizes, uint64_t Call, uint64_t Bytes) {
    Recent[Seen++ % kConfirm] = {Call, Bytes};
    Where W;
    if (!Sizes.empty() && Aligned) {
      const uint64_t Want = sizeAt(Sizes, Call, Offset);
      if (Want != 0 && Want != Bytes) {
        Aligned = false;
        W.Departed = true;
      }
    }
    if (!Aligned && realign(Sizes))
      W.Realigned = true;
    W.Aligned = Aligned;
    W.Call = Call > static_cast<uint64_t>(std::max<int64_t>(Offset, 0))
                 ? static_cast<uint64_t>(static_cast<int64_t>(Call) - Offset)
                 : 0;
    return W;
  }
  /// Live call index less profiled call index.
  int64_t offset() const { return Offset; }

private:
  /// The profiled size of live call `Call` at `Off`; 0 when unknown or out of the list.
  static uint64_t sizeAt(std::span<const uint64_t> Sizes, uint64_t Call, int64_t Off) {
    const int64_t P = static_cast<int64_t>(Call) - Off;
    return P >= 1 && static_cast<uint64_t>(P) <= Sizes.size() ? Sizes[static_cast<size_t>(P - 1)]
                                                               : 0;
  }
  bool agrees(std::span<const uint64_t> Sizes, int64_t Off) const {
    for (const auto &[Call, Bytes] : Recent)
      if (sizeAt(Sizes, Call, Off) != Bytes)
        return false; // an unknown size (0) never agrees: it proves nothing
    return true;
  }
  bool realign(std::span<const uint64_t> Sizes) {
    if (Seen < kConfirm)
      return false;
    // Only an offset the recent sizes single out: where several agree (runs
    // of equal sizes), a guess could put a transient buffer where the
    // profile had a gradient, so the calls keep going to the pool.
    int64_t Found = 0;
    unsigned Agreeing = 0;
    for (int64_t Off = Offset - kReach; Off <= Offset + kReach; ++Off)
      if (agrees(Sizes, Off)) {
        Found = Off;
        if (++Agreeing > 1)
          return false;
      }
    if (Agreeing == 0)
      return false;
    Offset = Found;
    Aligned = true;
    return true;
  }

  int64_t Offset = 0;
  bool Aligned = true;
  uint64_t Seen = 0;
  std::array<std::pair<uint64_t, uint64_t>, kConfirm> Recent{}; // (live call, bytes)
};

} // namespace deepum::executor::detail

#endif // DEEPUM_EXECUTOR_LIB_CALLALIGNMENT_H
