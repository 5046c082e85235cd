//===- FakeProfilerInjection.h - What the fake profiler recorded ------------===//
#ifndef DEEPUM_TESTS_FAKEPROFILERINJECTION_H
#define DEEPUM_TESTS_FAKEPROFILERINJECTION_H

#include <stddef.h>
#include <stdint.h>

extern "C" {
enum fake_profiler_event_kind { FAKE_PROFILER_ALLOC, FAKE_PROFILER_FREE, FAKE_PROFILER_STEP };
struct fake_profiler_event {
  fake_profiler_event_kind kind;
  uint64_t ptr;
  uint64_t bytes;
  uint64_t stream;
  uint64_t call; ///< the allocator's call count (record_alloc_call); 0 by record_alloc
};
/// Copies up to `max` events (oldest first) into `out`; returns how many there are.
typedef size_t (*fake_profiler_events_fn)(fake_profiler_event *out, size_t max);
}

#endif // DEEPUM_TESTS_FAKEPROFILERINJECTION_H
