//===- IterationMarker.cpp - Callbacks to iteration marks -------------------===//
#include "deepum/profiler/IterationMarker.h"

namespace deepum::profiler {

const char *markActionName(MarkAction A) {
  switch (A) {
  case MarkAction::None:
    return "none";
  case MarkAction::Begin:
    return "begin";
  case MarkAction::End:
    return "end";
  }
  return "?";
}

IterationMarker::IterationMarker(std::string Step) : StepRange(std::move(Step)) {}

bool IterationMarker::isStep(const char *Name) const {
  return usesRanges() && Name && StepRange == Name;
}

MarkAction IterationMarker::profilerCall(ThreadState &T, ProfilerApi Api, CallSite Site,
                                         bool Start) {
  bool Marks = !usesRanges();
  if (Api == ProfilerApi::Runtime) {
    // The flag is kept with or without a step range: it only silences the
    // driver call made inside this one.
    T.InsideRuntimeProfilerCall = Site == CallSite::Enter;
    if (!Marks)
      return MarkAction::None;
    if (Site == CallSite::Enter)
      // Stop at entry: work launched so far belongs to the iteration.
      return Start ? MarkAction::None : MarkAction::End;
    return Start ? MarkAction::Begin : MarkAction::None;
  }
  // The driver's own callbacks, unless a runtime call on this thread already counts.
  if (!Marks || T.InsideRuntimeProfilerCall)
    return MarkAction::None;
  if (Start)
    return Site == CallSite::Exit ? MarkAction::Begin : MarkAction::None;
  return Site == CallSite::Enter ? MarkAction::End : MarkAction::None;
}

MarkAction IterationMarker::profilerStart(ThreadState &T, ProfilerApi Api, CallSite Site) {
  return profilerCall(T, Api, Site, /*Start=*/true);
}

MarkAction IterationMarker::profilerStop(ThreadState &T, ProfilerApi Api, CallSite Site) {
  return profilerCall(T, Api, Site, /*Start=*/false);
}

MarkAction IterationMarker::rangePush(ThreadState &T, const char *Name) {
  if (!usesRanges())
    return MarkAction::None;
  bool Step = isStep(Name);
  T.Pushed.push_back(Step);
  return Step ? MarkAction::Begin : MarkAction::None;
}

MarkAction IterationMarker::rangePop(ThreadState &T) {
  if (!usesRanges() || T.Pushed.empty())
    return MarkAction::None; // a pop without a push on this thread
  bool WasStep = T.Pushed.back();
  T.Pushed.pop_back();
  return WasStep ? MarkAction::End : MarkAction::None;
}

MarkAction IterationMarker::rangeStart(const char *Name, std::optional<uint64_t> Id) {
  if (!isStep(Name) || !Id)
    return MarkAction::None;
  std::lock_guard<std::mutex> L(Mu);
  OpenRanges.insert(*Id);
  return MarkAction::Begin;
}

MarkAction IterationMarker::rangeEnd(uint64_t Id) {
  if (!usesRanges())
    return MarkAction::None;
  std::lock_guard<std::mutex> L(Mu);
  return OpenRanges.erase(Id) != 0 ? MarkAction::End : MarkAction::None;
}

} // namespace deepum::profiler
