//===- deepum/format/Perfetto.h - Chrome-trace / Perfetto timelines ---------===//
//
// Trace-event JSON (the format ui.perfetto.dev and chrome://tracing open):
// complete events ("X") for spans, instant events ("i") for points, counter
// events ("C") for levels. Events are written sorted by timestamp.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_PERFETTO_H
#define DEEPUM_FORMAT_PERFETTO_H

#include "deepum/format/Format.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace deepum::format {

/// A trace under construction. Times are nanoseconds; they are written as
/// microseconds, the unit of the trace-event format.
class TraceWriter {
public:
  /// Names a process (a device) and a thread (a stream or lane) once.
  void nameProcess(int Pid, llvm::StringRef Name);
  void nameThread(int Pid, int Tid, llvm::StringRef Name);
  void span(int Pid, int Tid, llvm::StringRef Name, llvm::StringRef Category, uint64_t StartNs,
            uint64_t DurNs, llvm::json::Object Args = {});
  void instant(int Pid, int Tid, llvm::StringRef Name, llvm::StringRef Category, uint64_t TimeNs,
               llvm::json::Object Args = {});
  void counter(int Pid, llvm::StringRef Name, uint64_t TimeNs, double Value);

  /// The whole trace: {"traceEvents": [...], "displayTimeUnit": "ns"}, sorted.
  llvm::json::Value finish();
  /// finish() written whole to Path (see writeFileAtomically); `Inputs` may
  /// not be overwritten.
  llvm::Error write(llvm::StringRef Path, llvm::ArrayRef<llvm::StringRef> Inputs = {});

private:
  struct Event {
    uint64_t TimeNs;
    uint64_t Order; // insertion order: keeps ties stable
    llvm::json::Object Body;
  };
  std::vector<Event> Events;
  std::vector<llvm::json::Object> Metadata;
};

/// Timeline of a profile: kernels per stream, faults and migrations as
/// instant events, live bytes and GPU-resident bytes as counters.
void addProfileTimeline(TraceWriter &W, const deepum::v1::Profile &P);

// writeFileAtomically, which write() uses, is declared in Format.h.

} // namespace deepum::format

#endif // DEEPUM_FORMAT_PERFETTO_H
