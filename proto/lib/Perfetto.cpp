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

static std::string metadataEvent(StringRef Kind, int Pid, int Tid, StringRef Name) {
  std::string Text;
  raw_string_ostream OS(Text);
  OS << json::Value(json::Object{{"ph", "M"},
                                 {"name", Kind},
                                 {"pid", Pid},
                                 {"tid", Tid},
                                 {"ts", 0},
                                 {"args", json::Object{{"name", Name}}}});
  return OS.str();
}

const char *TraceWriter::intern(StringRef S) { return Interned.insert(S).first->getKeyData(); }

const char *TraceWriter::internArgs(const json::Object &Args) {
  if (Args.empty())
    return nullptr;
  std::string Text;
  raw_string_ostream OS(Text);
  OS << json::Value(json::Object(Args));
  return intern(OS.str());
}

void TraceWriter::nameProcess(int Pid, StringRef Name) {
  Metadata.push_back(metadataEvent("process_name", Pid, 0, Name));
}

void TraceWriter::nameThread(int Pid, int Tid, StringRef Name) {
  Metadata.push_back(metadataEvent("thread_name", Pid, Tid, Name));
}

void TraceWriter::span(int Pid, int Tid, StringRef Name, StringRef Category, uint64_t StartNs,
                       uint64_t DurNs, json::Object Args) {
  add({StartNs, DurNs, 0, intern(Name), intern(Category), internArgs(Args), Pid, Tid,
       Phase::Complete});
}

void TraceWriter::instant(int Pid, int Tid, StringRef Name, StringRef Category, uint64_t TimeNs,
                          json::Object Args) {
  add({TimeNs, 0, 0, intern(Name), intern(Category), internArgs(Args), Pid, Tid, Phase::Instant});
}

void TraceWriter::counter(int Pid, StringRef Name, StringRef Series, uint64_t TimeNs,
                          double Value) {
  const char *N = intern(Name), *S = intern(Series);
  auto [It, New] = LastSample.try_emplace({Pid, N, S}, Events.size());
  if (!New && Events[It->second].TimeNs == TimeNs) {
    Events[It->second].Value = Value;
    return;
  }
  It->second = Events.size();
  add({TimeNs, 0, Value, N, S, nullptr, Pid, 0, Phase::Counter});
}

void TraceWriter::writeTo(raw_ostream &OS) {
  std::stable_sort(Events.begin(), Events.end(),
                   [](const Event &L, const Event &R) { return L.TimeNs < R.TimeNs; });
  json::OStream J(OS);
  J.objectBegin();
  J.attributeBegin("traceEvents");
  J.arrayBegin();
  for (const std::string &M : Metadata)
    J.rawValue(M);
  for (const Event &E : Events) {
    J.objectBegin();
    J.attribute("ph", E.Ph == Phase::Complete ? "X" : E.Ph == Phase::Instant ? "i" : "C");
    if (E.Ph == Phase::Instant)
      J.attribute("s", "t");
    J.attribute("name", StringRef(E.Name));
    if (E.Ph != Phase::Counter)
      J.attribute("cat", StringRef(E.Category));
    J.attribute("pid", E.Pid);
    if (E.Ph != Phase::Counter)
      J.attribute("tid", E.Tid);
    J.attribute("ts", toMicros(E.TimeNs));
    if (E.Ph == Phase::Complete)
      J.attribute("dur", toMicros(E.DurNs));
    if (E.Ph == Phase::Counter)
      J.attributeObject("args", [&] { J.attribute(E.Category, E.Value); });
    else if (E.Args) {
      J.attributeBegin("args");
      J.rawValue(StringRef(E.Args));
      J.attributeEnd();
    }
    J.objectEnd();
  }
  J.arrayEnd();
  J.attributeEnd();
  J.attribute("displayTimeUnit", "ns");
  J.objectEnd();
  J.flush();
  Metadata.clear();
  Events.clear();
  LastSample.clear();
  Interned.clear();
}

json::Value TraceWriter::finish() {
  std::string Text;
  raw_string_ostream OS(Text);
  writeTo(OS);
  Expected<json::Value> V = json::parse(OS.str());
  assert(V && "the writer writes valid JSON");
  return V ? std::move(*V) : json::Value(nullptr);
}

Error TraceWriter::write(StringRef Path, ArrayRef<StringRef> Inputs) {
  return writeFileAtomically(
      Path, [&](raw_ostream &OS) { writeTo(OS); }, Inputs);
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
  auto EmitLevel = [&](std::vector<std::pair<uint64_t, Delta>> &Deltas, StringRef Name,
                       StringRef Series) {
    std::sort(Deltas.begin(), Deltas.end());
    Delta Level = 0;
    for (size_t I = 0; I < Deltas.size(); ++I) {
      Level = std::max<Delta>(0, Level + Deltas[I].second);
      // One sample per timestamp: the level after all changes at that instant.
      if (I + 1 == Deltas.size() || Deltas[I + 1].first != Deltas[I].first)
        W.counter(Pid, Name, Series, Deltas[I].first, toMiB(static_cast<double>(Level)));
    }
  };
  EmitLevel(Live, "allocations", "live (MiB)");
  if (Resident.empty() && !P.kernels().empty())
    W.counter(Pid, "GPU memory", "resident (MiB)", P.kernels(0).start_ns(), 0);
  EmitLevel(Resident, "GPU memory", "resident (MiB)");
}

} // namespace deepum::format
