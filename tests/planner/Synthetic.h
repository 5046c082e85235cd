//===- Synthetic.h - Training-like profiles for the planner's tests ---------===//
#ifndef DEEPUM_TESTS_PLANNER_SYNTHETIC_H
#define DEEPUM_TESTS_PLANNER_SYNTHETIC_H

#include "deepum/v1/profile.pb.h"

#include <cstdint>

namespace deepum::test {

struct SyntheticOptions {
  int Layers = 8;
  int Iterations = 3;
  uint64_t ParamBytes = 6ull << 20;
  uint64_t ActivationBytes = 10ull << 20;
  uint64_t KernelNs = 200000; // 200 us
  bool Marks = true;
  /// Noise: an extra kernel in iteration 1.
  bool ExtraKernel = false;
  /// Noise: the last iteration loses its optimizer kernels (cut short).
  bool CutShort = false;
  /// Noise: backward kernels on a second stream.
  bool TwoStreams = false;
  /// Noise: iteration 0 reports blocks only, with half of them missing.
  bool MissingFaults = false;
  /// Kernels report UM blocks only (as measured profiles do), no tensors.
  bool BlocksOnly = false;
  /// Noise: the last iteration loses every other block record.
  bool MissingFaultsInLast = false;
  /// Same kernel name for every layer (IDs recur within the iteration).
  bool RepeatedNames = false;
  /// The first half of the layers is frozen (fine-tuning): no gradient, no
  /// optimizer step; their parameters are never written.
  bool FrozenParameters = false;
};

/// Forward (activations allocated), loss, backward (activations and
/// gradients freed as they die), optimizer; parameters, gradients and
/// optimizer state persistent.
deepum::v1::Profile syntheticTraining(const SyntheticOptions &O = {});

} // namespace deepum::test

#endif
