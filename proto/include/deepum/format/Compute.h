//===- deepum/format/Compute.h - Kernel compute times from another profile --===//
//
// A profile recorded with `deepum-profile --mode access-set` sees every block
// each kernel touches, because every kernel faults on all of it; its kernels'
// durations are therefore mostly the wait for those faults. On a GPU the
// fault records cover only part of that wait (Kernel.fault_stall_ns), and the
// rest would be taken for compute: on an H100, ResNet-50's access-set profile
// left 3.18 s of "compute" an iteration that trains in 40 ms
// (docs/results/gpu.md). A natural-mode profile of the same program, recorded
// where everything fits, has the true durations. takeComputeTimes lays them
// over the access-set profile: each kernel's stall becomes its recorded
// duration less the natural one, so format::computeNs gives the natural
// duration (never more than the recorded one).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_COMPUTE_H
#define DEEPUM_FORMAT_COMPUTE_H

#include "deepum/v1/profile.pb.h"

#include "llvm/Support/Error.h"

#include <cstdint>

namespace deepum::format {

/// Sets the fault stall of every kernel of every iteration of `P` from the
/// kernel at the same position of `Natural`'s last iteration. Fails, with
/// `P` unchanged, when `Natural` has no iteration, or an iteration of `P`
/// has another number of kernels, or a kernel at some position another
/// execution id (name and launch configuration): a profile of another
/// program. Returns the number of kernels set.
llvm::Expected<uint64_t> takeComputeTimes(deepum::v1::Profile &P,
                                          const deepum::v1::Profile &Natural);

/// `--compute-from PATH` of deepum-plan and deepum-sim: reads the natural
/// profile at `NaturalPath` and takes its compute times into `P`. A file that
/// cannot be read is its reader's error; a profile of another program is
/// "--compute-from PATH: not a profile of the same program: ...".
llvm::Error takeComputeTimesFrom(deepum::v1::Profile &P, llvm::StringRef NaturalPath);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_COMPUTE_H
