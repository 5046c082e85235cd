//===- OwnCuptiPort.cpp - The profiler's own CUPTI subscriber ---------------===//
//
// Used while the build has no executor CUPTI library: subscribes itself and
// dispatches to the handlers registered for each (domain, callback id). Same
// semantics as the executor's CuptiSubscriber, so the two are interchangeable.
//
//===----------------------------------------------------------------------===//
#include "CuptiPort.h"

#include "deepum/profiler/cuda/CuptiRecords.h"

#include <mutex>
#include <vector>

namespace deepum::profiler::cuda {
namespace {

class OwnCuptiPort final : public CuptiPort {
public:
  bool acquire() override {
    std::call_once(Once, [this] {
      CUptiResult R = cuptiSubscribe(&Subscriber, &OwnCuptiPort::dispatch, this);
      if (R == CUPTI_SUCCESS) {
        Available = true;
        return;
      }
      Reason = subscriberRefusal(R);
    });
    return Available;
  }
  std::string unavailableReason() const override { return Reason; }

  bool addHandler(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid, CuptiHandler H,
                  void *UserData) override {
    if (!Available)
      return false;
    if (cuptiEnableCallback(1, Subscriber, Domain, Cbid) != CUPTI_SUCCESS)
      return false;
    std::lock_guard<std::mutex> L(Mu);
    Handlers.push_back({Domain, Cbid, H, UserData});
    return true;
  }

  bool registerActivityBuffers(CUpti_BuffersCallbackRequestFunc Request,
                               CUpti_BuffersCallbackCompleteFunc Complete) override {
    std::lock_guard<std::mutex> L(Mu);
    if (BuffersTaken)
      return false;
    if (cuptiActivityRegisterCallbacks(Request, Complete) != CUPTI_SUCCESS)
      return false;
    BuffersTaken = true;
    return true;
  }
  CUptiResult enableActivity(CUpti_ActivityKind Kind) override { return cuptiActivityEnable(Kind); }
  CUptiResult disableActivity(CUpti_ActivityKind Kind) override {
    return cuptiActivityDisable(Kind);
  }
  CUptiResult flushActivity() override {
    return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }

private:
  struct Entry {
    CUpti_CallbackDomain Domain;
    CUpti_CallbackId Cbid;
    CuptiHandler H;
    void *UserData;
  };

  static void CUPTIAPI dispatch(void *Self, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                                const void *Data) {
    auto *P = static_cast<OwnCuptiPort *>(Self);
    // Copied under the lock, called outside it: a handler may make CUDA calls
    // whose own callbacks come back here.
    std::vector<Entry> Matching;
    {
      std::lock_guard<std::mutex> L(P->Mu);
      for (const Entry &E : P->Handlers)
        if (E.Domain == Domain && E.Cbid == Cbid)
          Matching.push_back(E);
    }
    for (const Entry &E : Matching)
      E.H(E.UserData, Domain, Cbid, Data);
  }

  std::once_flag Once;
  CUpti_SubscriberHandle Subscriber = nullptr;
  bool Available = false;
  std::string Reason;
  std::mutex Mu;
  std::vector<Entry> Handlers;
  bool BuffersTaken = false;
};

} // namespace

CuptiPort &processCuptiPort() {
  static OwnCuptiPort *Port = new OwnCuptiPort(); // never destroyed: callbacks arrive during exit
  return *Port;
}

} // namespace deepum::profiler::cuda
