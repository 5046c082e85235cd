//===- Perfetto.cpp - Chrome-trace / Perfetto timelines ---------------------===//
#include "deepum/format/Perfetto.h"
#include "deepum/format/Summary.h"
#include "deepum/format/Units.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::format {

static double toMicros(uint64_t Ns) { return static_cast<double>(Ns) / 1e3; }

void TraceWriter::nameProcess(int Pid, StringRef Name) {
  Metadata.push_back(json::Object{{"ph", "M"},
                                  {"name", "process_name"},
                                  {"pid", Pid},
                                  {"tid", 0},
                                  {"ts", 0},
                                  {"args", json::Object{{"name", Name.str()}}}});
}

void TraceWriter::nameThread(int Pid, int Tid, StringRef Name) {
  Metadata.push_back(json::Object{{"ph", "M"},
                                  {"name", "thread_name"},
                                  {"pid", Pid},
                                  {"tid", Tid},
                                  {"ts", 0},
                                  {"args", json::Object{{"name", Name.str()}}}});
}

void TraceWriter::span(int Pid, int Tid, StringRef Name, StringRef Category, uint64_t StartNs,
                       uint64_t DurNs, json::Object Args) {
  json::Object E{{"ph", "X"},         {"name", Name.str()},   {"cat", Category.str()},
                 {"pid", Pid},        {"tid", Tid},     {"ts", toMicros(StartNs)},
                 {"dur", toMicros(DurNs)}};
  if (!Args.empty())
    E["args"] = std::move(Args);
  Events.push_back({StartNs, Events.size(), std::move(E)});
}

void TraceWriter::instant(int Pid, int Tid, StringRef Name, StringRef Category, uint64_t TimeNs,
                          json::Object Args) {
  json::Object E{{"ph", "i"}, {"s", "t"},   {"name", Name.str()},           {"cat", Category.str()},
                 {"pid", Pid}, {"tid", Tid}, {"ts", toMicros(TimeNs)}};
  if (!Args.empty())
    E["args"] = std::move(Args);
  Events.push_back({TimeNs, Events.size(), std::move(E)});
}

void TraceWriter::counter(int Pid, StringRef Name, uint64_t TimeNs, double Value) {
  json::Object E{{"ph", "C"},
                 {"name", Name.str()},
                 {"pid", Pid},
                 {"ts", toMicros(TimeNs)},
                 {"args", json::Object{{Name.str(), Value}}}};
  Events.push_back({TimeNs, Events.size(), std::move(E)});
}

json::Value TraceWriter::finish() {
  std::stable_sort(Events.begin(), Events.end(), [](const Event &L, const Event &R) {
    return L.TimeNs != R.TimeNs ? L.TimeNs < R.TimeNs : L.Order < R.Order;
  });
  json::Array All;
  for (json::Object &M : Metadata)
    All.push_back(std::move(M));
  for (Event &E : Events)
    All.push_back(std::move(E.Body));
  Metadata.clear();
  Events.clear();
  return json::Object{{"traceEvents", std::move(All)}, {"displayTimeUnit", "ns"}};
}

Error TraceWriter::write(StringRef Path, ArrayRef<StringRef> Inputs) {
  std::string Text;
  raw_string_ostream OS(Text);
  OS << finish();
  OS.flush();
  return writeFileAtomically(Path, Text, Inputs);
}

void addProfileTimeline(TraceWriter &W, const Profile &P) {
  constexpr int Pid = 1;
  constexpr int FaultTid = 1000, HtodTid = 1001, DtohTid = 1002, UmEventTid = 1003;
  W.nameProcess(Pid, P.device().name().empty() ? "GPU" : P.device().name());

  DenseMap<uint64_t, int> StreamTid;
  for (const Kernel &K : P.kernels()) {
    auto [It, New] = StreamTid.try_emplace(K.stream(), static_cast<int>(StreamTid.size()) + 1);
    if (New)
      W.nameThread(Pid, It->second, "stream " + std::to_string(K.stream()));
    W.span(Pid, It->second, K.name(), "kernel", K.start_ns(), K.end_ns() - K.start_ns(),
           json::Object{{"signature", signatureText(K)}, {"blocks", K.blocks_size()}});
  }
  if (P.faults_size() > 0)
    W.nameThread(Pid, FaultTid, "GPU page faults");
  for (const PageFault &F : P.faults())
    W.instant(Pid, FaultTid, "fault", "um", F.time_ns(),
              json::Object{{"address", "0x" + utohexstr(F.address())},
                           {"kernel", F.kernel_index()}});
  if (P.migrations_size() > 0) {
    W.nameThread(Pid, HtodTid, "migrations HtoD");
    W.nameThread(Pid, DtohTid, "migrations DtoH");
  }
  // GPU-resident bytes follow the migrations: in on HtoD, out on DtoH. Sizes
  // are uint64: changes and levels are kept exact in 128 bits.
  using Delta = WideBytes;
  std::vector<std::pair<uint64_t, Delta>> Resident;
  for (const Migration &M : P.migrations()) {
    bool In = M.direction() == MIGRATION_DIRECTION_HOST_TO_DEVICE;
    W.instant(Pid, In ? HtodTid : DtohTid, causeName(M.cause()), "um", M.start_ns(),
              json::Object{{"address", "0x" + utohexstr(M.address())},
                           {"bytes", M.bytes()},
                           {"duration_us", toMicros(M.end_ns() - M.start_ns())}});
    Resident.emplace_back(M.end_ns(), In ? Delta(M.bytes()) : -Delta(M.bytes()));
  }
  if (P.um_events_size() > 0)
    W.nameThread(Pid, UmEventTid, "UM events");
  for (const UmEvent &E : P.um_events()) {
    StringRef Name = E.kind() == UM_EVENT_KIND_THRASHING    ? "thrashing"
                     : E.kind() == UM_EVENT_KIND_THROTTLING ? "throttling"
                                                            : "remote map";
    W.instant(Pid, UmEventTid, Name, "um", E.time_ns(),
              json::Object{{"address", "0x" + utohexstr(E.address())}});
  }

  std::vector<std::pair<uint64_t, Delta>> Live;
  for (const Allocation &A : P.allocations()) {
    Live.emplace_back(A.alloc_time_ns(), Delta(A.size_bytes()));
    if (A.freed())
      Live.emplace_back(A.free_time_ns(), -Delta(A.size_bytes()));
  }
  auto EmitLevel = [&](std::vector<std::pair<uint64_t, Delta>> &Deltas, StringRef Name) {
    std::sort(Deltas.begin(), Deltas.end());
    Delta Level = 0;
    for (size_t I = 0; I < Deltas.size(); ++I) {
      Level = std::max<Delta>(0, Level + Deltas[I].second);
      // One sample per timestamp: the level after all changes at that instant.
      if (I + 1 == Deltas.size() || Deltas[I + 1].first != Deltas[I].first)
        W.counter(Pid, Name, Deltas[I].first, static_cast<double>(Level));
    }
  };
  EmitLevel(Live, "live bytes");
  if (Resident.empty() && !P.kernels().empty())
    W.counter(Pid, "GPU-resident bytes", P.kernels(0).start_ns(), 0);
  EmitLevel(Resident, "GPU-resident bytes");
}

} // namespace deepum::format
