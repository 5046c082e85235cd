//===- Subscriber.cpp - The process's one CUPTI subscriber -----------------===//
#include "deepum/cupti/Subscriber.h"

#include "deepum/base/Log.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace deepum::cupti {

using base::log;
using base::LogLevel;

namespace {
struct Entry {
  CuptiHandlerId Id;
  CUpti_CallbackDomain Domain;
  CUpti_CallbackId Cbid; // ~0u = whole domain
  CuptiHandler Handler;
  void *UserData;
};
constexpr CUpti_CallbackId kWholeDomain = ~CUpti_CallbackId{0};

std::string resultText(CUptiResult R) {
  const char *S = nullptr;
  if (cuptiGetResultString(R, &S) != CUPTI_SUCCESS || !S)
    return "CUPTI error " + std::to_string(static_cast<int>(R));
  return S;
}
} // namespace

struct CuptiSubscriber::State {
  std::mutex Mu;                // serialises acquire and registration
  std::shared_mutex HandlersMu; // readers: callbacks; writers: add/remove
  std::vector<Entry> Handlers;
  bool Tried = false;
  bool Ok = false;
  std::string Why;
  CUpti_SubscriberHandle Handle = nullptr;
  CuptiHandlerId NextId = 1;
  bool ActivityRegistered = false;
  const CuptiTableV1 *Peer = nullptr; // forward everything here when set
};

CuptiSubscriber &CuptiSubscriber::instance() {
  static CuptiSubscriber *S =
      new CuptiSubscriber(); // never destroyed: callbacks may arrive at exit
  return *S;
}

CuptiSubscriber::State &CuptiSubscriber::state() const {
  static State *S = new State();
  return *S;
}

static void CUPTIAPI dispatch(void *UserData, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                              const void *Data) {
  auto *St = static_cast<CuptiSubscriber::State *>(UserData);
  std::shared_lock<std::shared_mutex> Lock(St->HandlersMu);
  for (const Entry &E : St->Handlers)
    if (E.Domain == Domain && (E.Cbid == Cbid || E.Cbid == kWholeDomain))
      E.Handler(E.UserData, Domain, Cbid, Data);
}

namespace {
const CuptiTableV1 *ownTable();

/// The peer table of another library that holds the subscriber, if any.
/// Called without this copy's lock held: a peer's Available() takes the
/// peer's own lock, and two libraries probing each other at once must not
/// each hold theirs while waiting for the other's.
const CuptiTableV1 *findPeer() {
  for (const char *Name : kCuptiPeerLibraries) {
    void *H = dlopen(Name, RTLD_NOW | RTLD_NOLOAD);
    if (!H)
      continue;
    auto *Fn = reinterpret_cast<const CuptiTableV1 *(*)()>(dlsym(H, "deepum_cupti_v1"));
    const CuptiTableV1 *T = Fn ? Fn() : nullptr;
    dlclose(H); // RTLD_NOLOAD took a reference; the library stays loaded
    // This copy's own table by address, not through deepum_cupti_v1(): with
    // another library that exports the name loaded globally (libdeepum linked
    // or preloaded into the program), that call binds to the other copy, and
    // this copy's own table would pass for a peer.
    if (T && T != ownTable() && T->Size >= sizeof(CuptiTableV1) && T->Available())
      return T;
  }
  return nullptr;
}
} // namespace

bool CuptiSubscriber::acquire() {
  State &S = state();
  bool Probe;
  {
    std::lock_guard<std::mutex> Lock(S.Mu);
    Probe = !S.Tried && !S.Peer;
  }
  if (Probe) {
    const CuptiTableV1 *P = findPeer();
    std::lock_guard<std::mutex> Lock(S.Mu);
    if (!S.Tried && !S.Peer)
      S.Peer = P;
  }
  if (const CuptiTableV1 *P = peer())
    return P->Acquire() != 0;
  if (localAcquire())
    return true;
  // Another copy of this code may have subscribed meanwhile: use it.
  const CuptiTableV1 *P = findPeer();
  if (!P)
    return false;
  std::lock_guard<std::mutex> Lock(S.Mu);
  S.Peer = P;
  S.Ok = false;
  return true;
}

bool CuptiSubscriber::localAcquire() {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Tried)
    return S.Ok;
  S.Tried = true;
  CUptiResult R = cuptiSubscribe(&S.Handle, reinterpret_cast<CUpti_CallbackFunc>(&dispatch), &S);
  if (R == CUPTI_SUCCESS) {
    S.Ok = true;
    return true;
  }
  if (R == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    S.Why = "another tool holds the CUPTI subscriber (torch.profiler, Nsight, compute-sanitizer?)";
  else
    S.Why = "cuptiSubscribe failed: " + resultText(R);
  return false;
}

bool CuptiSubscriber::available() const {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  return S.Peer ? S.Peer->Available() != 0 : S.Ok;
}

std::string CuptiSubscriber::unavailableReason() const {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Peer) {
    char Buf[256] = {0};
    S.Peer->UnavailableReason(Buf, sizeof Buf);
    return Buf;
  }
  return S.Tried ? S.Why : "CUPTI subscriber not acquired yet";
}

CuptiHandlerId CuptiSubscriber::addHandler(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                                           CuptiHandler Handler, void *UserData) {
  State &S = state();
  if (const CuptiTableV1 *P = peer())
    return P->AddHandler(static_cast<int>(Domain), Cbid, Handler, UserData);
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (!S.Ok || !Handler)
    return 0;
  CUptiResult R = Cbid == kWholeDomain ? cuptiEnableDomain(1, S.Handle, Domain)
                                       : cuptiEnableCallback(1, S.Handle, Domain, Cbid);
  if (R != CUPTI_SUCCESS) {
    log(LogLevel::Info, "cupti: enabling callback %u of domain %d failed: %s", Cbid,
        static_cast<int>(Domain), resultText(R).c_str());
    return 0;
  }
  std::unique_lock<std::shared_mutex> W(S.HandlersMu);
  CuptiHandlerId Id = S.NextId++;
  S.Handlers.push_back({Id, Domain, Cbid, Handler, UserData});
  return Id;
}

CuptiHandlerId CuptiSubscriber::addDomainHandler(CUpti_CallbackDomain Domain, CuptiHandler Handler,
                                                 void *UserData) {
  return addHandler(Domain, kWholeDomain, Handler, UserData);
}

bool CuptiSubscriber::holdsSubscriber() const {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  return S.Ok && !S.Peer;
}

void CuptiSubscriber::removeHandler(CuptiHandlerId Id) {
  State &S = state();
  if (const CuptiTableV1 *P = peer()) {
    P->RemoveHandler(Id);
    return;
  }
  std::unique_lock<std::shared_mutex> W(S.HandlersMu);
  S.Handlers.erase(std::remove_if(S.Handlers.begin(), S.Handlers.end(),
                                  [&](const Entry &E) { return E.Id == Id; }),
                   S.Handlers.end());
}

bool CuptiSubscriber::registerActivityBuffers(CUpti_BuffersCallbackRequestFunc Request,
                                              CUpti_BuffersCallbackCompleteFunc Complete) {
  State &S = state();
  if (const CuptiTableV1 *P = peer())
    return P->RegisterActivityBuffers(Request, Complete) != 0;
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.ActivityRegistered)
    return false;
  CUptiResult R = cuptiActivityRegisterCallbacks(Request, Complete);
  if (R != CUPTI_SUCCESS) {
    log(LogLevel::Warn, "cupti: cuptiActivityRegisterCallbacks failed: %s", resultText(R).c_str());
    return false;
  }
  S.ActivityRegistered = true;
  return true;
}

CUptiResult CuptiSubscriber::enableActivity(CUpti_ActivityKind Kind) {
  if (const CuptiTableV1 *P = peer())
    return static_cast<CUptiResult>(P->EnableActivity(static_cast<int>(Kind)));
  CUptiResult R = cuptiActivityEnable(Kind);
  if (R != CUPTI_SUCCESS)
    log(LogLevel::Info, "cupti: enabling activity kind %d failed: %s", static_cast<int>(Kind),
        resultText(R).c_str());
  return R;
}

CUptiResult CuptiSubscriber::disableActivity(CUpti_ActivityKind Kind) {
  if (const CuptiTableV1 *P = peer())
    return static_cast<CUptiResult>(P->DisableActivity(static_cast<int>(Kind)));
  return cuptiActivityDisable(Kind);
}

CUptiResult CuptiSubscriber::flushActivity() {
  if (const CuptiTableV1 *P = peer())
    return static_cast<CUptiResult>(P->FlushActivity());
  return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

const CuptiTableV1 *CuptiSubscriber::peer() const {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  return S.Peer;
}

namespace {
// The table other copies forward to. It answers "available" only while this
// copy holds the subscriber itself (a forwarding copy never re-exports).
const CuptiTableV1 *ownTable() {
  static const CuptiTableV1 Table = {
      sizeof(CuptiTableV1),
      [] { return CuptiSubscriber::instance().acquire() ? 1 : 0; },
      [] { return CuptiSubscriber::instance().holdsSubscriber() ? 1 : 0; },
      [](char *Buf, size_t Len) {
        std::string W = CuptiSubscriber::instance().unavailableReason();
        if (Len) {
          std::strncpy(Buf, W.c_str(), Len - 1);
          Buf[Len - 1] = 0;
        }
      },
      [](int Domain, uint32_t Cbid, CuptiHandler H, void *U) -> uint64_t {
        return CuptiSubscriber::instance().addHandler(static_cast<CUpti_CallbackDomain>(Domain),
                                                      Cbid, H, U);
      },
      [](uint64_t Id) { CuptiSubscriber::instance().removeHandler(Id); },
      [](CUpti_BuffersCallbackRequestFunc R, CUpti_BuffersCallbackCompleteFunc C) {
        return CuptiSubscriber::instance().registerActivityBuffers(R, C) ? 1 : 0;
      },
      [](int K) {
        return static_cast<int>(
            CuptiSubscriber::instance().enableActivity(static_cast<CUpti_ActivityKind>(K)));
      },
      [](int K) {
        return static_cast<int>(
            CuptiSubscriber::instance().disableActivity(static_cast<CUpti_ActivityKind>(K)));
      },
      [] { return static_cast<int>(CuptiSubscriber::instance().flushActivity()); },
  };
  return &Table;
}
} // namespace

} // namespace deepum::cupti

extern "C" __attribute__((visibility("default"))) const deepum::cupti::CuptiTableV1 *
deepum_cupti_v1(void) {
  return deepum::cupti::ownTable();
}
