//===- deepum/format/Perfetto.h - Chrome-trace / Perfetto timelines ---------===//
//
// Trace-event JSON (the format ui.perfetto.dev and chrome://tracing open):
// complete events ("X") for spans, instant events ("i") for points, counter
// events ("C") for levels. Events are written sorted by timestamp.
//
// A timeline of a large model holds hundreds of thousands of events. The
// writer keeps each as a few words (names interned, arguments as their JSON
// text) and streams the document to its file: it never builds the whole
// trace as a JSON value (gpt2-medium at 2x: 2.95 GB and 25 s before, see
// docs/simulator.md for the figures now).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_PERFETTO_H
#define DEEPUM_FORMAT_PERFETTO_H

#include "deepum/format/Format.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace deepum::format {

/// Bytes shown on a counter track: MiB, the unit its series name says.
inline double toMiB(double Bytes) { return Bytes / (1024.0 * 1024.0); }

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
  /// One sample of the series `Series` of counter `Name`. Perfetto names the
  /// track "Name Series", so the series carries the unit and never repeats
  /// the name: counter(P, "GPU memory", "resident (MiB)", T, toMiB(Bytes)).
  /// A second sample of the same series at the same time replaces the first:
  /// the level after every change at that instant is what is shown.
  void counter(int Pid, llvm::StringRef Name, llvm::StringRef Series, uint64_t TimeNs,
               double Value);

  /// Events recorded so far (metadata excluded).
  size_t size() const { return Events.size(); }

  /// Streams the trace, {"traceEvents": [...], "displayTimeUnit": "ns"},
  /// metadata first, then events sorted by time (ties in recording order),
  /// and forgets them.
  void writeTo(llvm::raw_ostream &OS);
  /// writeTo() parsed back: the whole trace as a value (for tests).
  llvm::json::Value finish();
  /// writeTo() streamed to Path, replacing it only once written whole (see
  /// writeFileAtomically); `Inputs` may not be overwritten.
  llvm::Error write(llvm::StringRef Path, llvm::ArrayRef<llvm::StringRef> Inputs = {});

private:
  enum class Phase : uint8_t { Complete, Instant, Counter };
  struct Event {
    uint64_t TimeNs;
    uint64_t DurNs;       // Complete only
    double Value;         // Counter only
    const char *Name;     // interned, NUL-terminated
    const char *Category; // interned (Counter: the series)
    const char *Args;     // interned JSON text of the arguments, or null
    int32_t Pid, Tid;
    Phase Ph;
  };
  const char *intern(llvm::StringRef S);
  const char *internArgs(const llvm::json::Object &Args);
  void add(const Event &E) { Events.push_back(E); }

  std::vector<Event> Events;
  std::vector<std::string> Metadata; // JSON text of each "M" event
  /// Interned names and argument texts: an entry's key never moves.
  llvm::StringSet<> Interned;
  /// Last sample of each counter series: (pid, name, series) -> index in Events.
  std::map<std::tuple<int, const char *, const char *>, size_t> LastSample;
};

/// Timeline of a profile: kernels per stream, faults and migrations as
/// instant events, live and GPU-resident MiB as counters.
void addProfileTimeline(TraceWriter &W, const deepum::v1::Profile &P);

// writeFileAtomically, which write() uses, is declared in Format.h.

} // namespace deepum::format

#endif // DEEPUM_FORMAT_PERFETTO_H
