//===- deepum/profiler/cuda/CuptiRecords.h - The CUPTI boundary -------------===//
//
// The one place CUPTI activity records become the profiler's own records
// (deepum/profiler/Records.h). Its implementation is the only file that
// includes cupti_activity.h for record layouts; this header does not, so
// the tests that feed it hand-built records see CUPTI only where they build them.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_CUDA_CUPTIRECORDS_H
#define DEEPUM_PROFILER_CUDA_CUPTIRECORDS_H

#include "deepum/profiler/Records.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace deepum::profiler::cuda {

/// Translates one activity record (a `const CUpti_Activity *`) into `Sink`.
/// Returns false for kinds the profiler does not use; they are skipped.
bool translateActivity(const void *Record, RecordSink &Sink);

/// Steps through a completed activity buffer: returns the next record after
/// `*Record` (null = the first) or null at the end. cuptiActivityGetNextRecord
/// in the injection library; a walk over hand-built records in tests.
using NextRecordFn = llvm::function_ref<const void *(const void *Previous)>;

/// What one completed buffer held.
struct BufferStats {
  uint64_t Records = 0;
  uint64_t Translated = 0;
  uint64_t Dropped = 0;
};

/// Translates every record of a completed buffer and the count of records
/// CUPTI dropped for it (cuptiActivityGetNumDroppedRecords).
BufferStats drainBuffer(NextRecordFn Next, uint64_t Dropped, RecordSink &Sink);

/// The one-line reason Unified Memory counters are unavailable, for the
/// CUPTI result of configuring or enabling them (a CUptiResult value).
std::string umCounterRefusal(int CuptiResult);

/// Why UM counters are pointless without concurrentManagedAccess.
std::string noConcurrentManagedAccessReason();

/// What recording loses without CUPTI callbacks (the subscriber is taken).
std::string withoutCallbacks();

/// The message when the process's one CUPTI callback subscriber is taken.
std::string subscriberRefusal(int CuptiResult);

} // namespace deepum::profiler::cuda

#endif // DEEPUM_PROFILER_CUDA_CUPTIRECORDS_H
