//===- SharedCuptiPort.cpp - CUPTI through the shared subscriber ------------===//
#include "CuptiPort.h"

#include "deepum/cupti/Subscriber.h"

namespace deepum::profiler::cuda {
namespace {

using deepum::cupti::CuptiSubscriber;

class SharedCuptiPort final : public CuptiPort {
public:
  bool acquire() override { return CuptiSubscriber::instance().acquire(); }
  std::string unavailableReason() const override {
    return CuptiSubscriber::instance().unavailableReason();
  }
  bool addHandler(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid, CuptiHandler H,
                  void *UserData) override {
    return CuptiSubscriber::instance().addHandler(Domain, Cbid, H, UserData) != 0;
  }
  bool registerActivityBuffers(CUpti_BuffersCallbackRequestFunc Request,
                               CUpti_BuffersCallbackCompleteFunc Complete) override {
    return CuptiSubscriber::instance().registerActivityBuffers(Request, Complete);
  }
  CUptiResult enableActivity(CUpti_ActivityKind Kind) override {
    return CuptiSubscriber::instance().enableActivity(Kind);
  }
  CUptiResult disableActivity(CUpti_ActivityKind Kind) override {
    return CuptiSubscriber::instance().disableActivity(Kind);
  }
  CUptiResult flushActivity() override { return CuptiSubscriber::instance().flushActivity(); }
};

} // namespace

CuptiPort &processCuptiPort() {
  static SharedCuptiPort *Port = new SharedCuptiPort(); // never destroyed: callbacks at exit
  return *Port;
}

} // namespace deepum::profiler::cuda
