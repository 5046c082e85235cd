//===- deepum/format/AccessSources.h - A kernel's access set from two sources ===//
//
// A profile knows what a kernel touches from two sources. Faults (and the
// migrations they cause) are a sample: a real driver reports only some of
// them, and a page already resident faults on nothing. A launch's arguments
// are a census of what the kernel may reach directly: every allocation a
// word of its parameter buffer points into (Kernel.named_allocations,
// recorded by deepum-profile). What a kernel touched but no argument named
// was reached through memory (Kernel.indirect_allocations).
//
// addNamedAccesses widens each kernel's access set to every byte of the
// allocations its arguments name: the bytes no recorded access covers are
// added with an unknown direction (read-write downstream), so a plan
// prefetches them and never drops or discards them as dead. The faults keep
// their directions where they have them. The planner does this before it
// plans (deepum-plan --access-sources), and reports how many bytes each
// source gave.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_ACCESSSOURCES_H
#define DEEPUM_FORMAT_ACCESSSOURCES_H

#include "deepum/v1/profile.pb.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace deepum::format {

/// Bytes of kernels' access sets, summed over kernels (a byte touched by two
/// kernels counts twice), by where they come from.
struct SourceBytes {
  /// Recorded accesses (faults, migrations) inside allocations the arguments name.
  uint64_t NamedAndFaulted = 0;
  /// Bytes of named allocations that no recorded access covers: what the
  /// faults missed, or what the kernel may touch and did not.
  uint64_t NamedOnly = 0;
  /// Recorded accesses of kernels whose arguments were not read.
  uint64_t FaultedOnly = 0;
  /// Recorded accesses of kernels whose arguments were read, in allocations
  /// no argument names (reached through pointers in memory).
  uint64_t Indirect = 0;
  /// Kernel launches counted.
  uint64_t Launches = 0;

  SourceBytes &operator+=(const SourceBytes &O);
};

struct AccessSourceReport {
  /// Kernels whose arguments were read, could not be read (no layout), and all.
  uint64_t KernelsScanned = 0, KernelsNoLayout = 0, Kernels = 0;
  SourceBytes Total;
  /// By kernel name (the class of a launch).
  std::map<std::string, SourceBytes> ByKernel;
  /// Allocations some kernel reached without naming them
  /// (Kernel.indirect_allocations): a copy-out plan must leave them be.
  uint64_t IndirectAllocations = 0;
};

/// Whether any kernel of `P` had its arguments read.
bool hasArguments(const deepum::v1::Profile &P);

/// Each source's bytes in `P`'s kernels. `P` must be valid (validateProfile).
AccessSourceReport accessSources(const deepum::v1::Profile &P);

/// A kernel name's class for a table: demangled, without its template
/// arguments and parameters ("matmul", "at::native::vectorized_elementwise_kernel").
std::string kernelClass(const std::string &Name);

/// The report as a Markdown table: one row per kernel class (most bytes
/// first), then the total. Bytes in MiB.
std::string accessSourceTable(const AccessSourceReport &R);

/// The allocations (Allocation.id, ascending) whose every recorded access in
/// `P` came from a kernel that named them in its arguments: what
/// libdeepum's launch-time guard protects, and so what the copy path may take
/// off the GPU. An allocation qualifies when some kernel whose arguments were
/// read names it, no such kernel reached it without naming it
/// (indirect_allocations), and no kernel whose arguments were not read
/// touched it (its tensors, or blocks overlapping it). A derived trace's
/// accesses are its operators' tensor arguments: each allocation some kernel
/// touches qualifies. `P` must be valid.
std::vector<uint64_t> guardedAllocations(const deepum::v1::Profile &P);

/// Adds to each kernel of `P` the bytes of its named allocations that no
/// access of it covers (TensorAccess, unknown direction), unless the kernel
/// records blocks only (the planner reads a kernel's tensors when it has any,
/// its blocks otherwise). Blocks are left as recorded. Returns the report of
/// `P` as it was. `P` must be valid.
AccessSourceReport addNamedAccesses(deepum::v1::Profile &P);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_ACCESSSOURCES_H
