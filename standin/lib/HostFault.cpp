//===- HostFault.cpp - CPU touches of GPU-resident managed memory ---------===//
//
// On a GPU, a managed page that migrated to the device is unmapped from the
// CPU: a host access faults, and the driver's CPU fault handler brings the
// page back before the access goes on. The stand-in does the same with the
// host's MMU. Every 64 KiB page the model holds on the GPU is protected
// (PROT_NONE; PROT_READ for a read-mostly duplicate, which the host may read
// where it is), and a SIGSEGV handler serves a host touch of one through the
// engine (Engine::hostFault): the page goes back, the host's clock waits for
// it, and the page is unprotected.
//
// The GPU's own accesses are the stand-in's code touching the same bytes:
// twins, copies, memsets, poison. They run with the model's lock held, and a
// thread holding it acts for the device: its faults open the whole 2 MiB
// block without a migration, and the block's protection is put back from the
// model's residency when the lock is let go. Protections follow the engine's
// residency log (Engine::setResidencyLog) at every release of the lock.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>

using namespace deepum::standin;

namespace {

constexpr uint64_t kPagesPerBlock = kBlockBytes / kPageBytes;

// Model-lock depth of this thread: above 0, it acts for the GPU.
__attribute__((tls_model("initial-exec"))) thread_local int LockDepth = 0;

// Blocks the GPU's accesses opened (the handler writes them; lock held).
constexpr size_t kMaxOpened = 4096;
uint64_t Opened[kMaxOpened];
size_t OpenedCount = 0;
bool OpenedOverflow = false;

struct sigaction Previous;
std::atomic<bool> Installed{false};

/// Passes a fault that is not the stand-in's to whoever handled SIGSEGV
/// before it (a sanitizer's handler, or the default: the process dies).
void chain(int Sig, siginfo_t *Info, void *Context) {
  if (Previous.sa_flags & SA_SIGINFO) {
    if (Previous.sa_sigaction) {
      Previous.sa_sigaction(Sig, Info, Context);
      return;
    }
  } else if (Previous.sa_handler != SIG_DFL && Previous.sa_handler != SIG_IGN) {
    Previous.sa_handler(Sig);
    return;
  }
  // Default action: restore it; the faulting access runs again and kills
  // the process as it would have without the stand-in.
  struct sigaction Default {};
  Default.sa_handler = SIG_DFL;
  sigemptyset(&Default.sa_mask);
  sigaction(Sig, &Default, nullptr);
}

/// The protection of the block holding `Address` when its page is
/// protected (null otherwise); `Bit`: the page's bit in it.
Model::HostProtection *protectionAt(Model &M, uint64_t Address, uint32_t &Bit) {
  auto It = M.Protected.find(Address / kBlockBytes);
  Bit = uint32_t{1} << ((Address / kPageBytes) % kPagesPerBlock);
  return It != M.Protected.end() && ((It->second.None | It->second.ReadOnly) & Bit) ? &It->second
                                                                                   : nullptr;
}

void onFault(int Sig, siginfo_t *Info, void *Context) {
  const int SavedErrno = errno;
  const auto Address = reinterpret_cast<uint64_t>(Info->si_addr);
  Model &M = Model::get();
  uint32_t Bit = 0;
  if (LockDepth > 0) {
    // The GPU's access (this thread holds the lock): open the block.
    if (!protectionAt(M, Address, Bit)) {
      chain(Sig, Info, Context);
      errno = SavedErrno;
      return;
    }
    const uint64_t Block = Address / kBlockBytes;
    mprotect(reinterpret_cast<void *>(Block * kBlockBytes), kBlockBytes, PROT_READ | PROT_WRITE);
    if (OpenedCount < kMaxOpened)
      Opened[OpenedCount++] = Block;
    else
      OpenedOverflow = true;
    errno = SavedErrno;
    return;
  }
  // The host's access: the driver's CPU fault.
  {
    ModelLock Lock(M);
    if (const Model::HostProtection *P = protectionAt(M, Address, Bit)) {
      const uint64_t Page = Address / kPageBytes * kPageBytes;
      // A fault on a read-only page is a write; on a PROT_NONE page the
      // access may be either, and either brings the page back.
      M.Eng->hostFault(Page, /*Write=*/(P->ReadOnly & Bit) != 0);
      M.syncProtection();
      if (Model::HostProtection *Left = protectionAt(M, Address, Bit)) {
        // The model no longer holds it on the GPU (it cannot, once served):
        // never fault on it forever.
        mprotect(reinterpret_cast<void *>(Page), kPageBytes, PROT_READ | PROT_WRITE);
        Left->None &= ~Bit;
        Left->ReadOnly &= ~Bit;
      }
      errno = SavedErrno;
      return;
    }
  }
  chain(Sig, Info, Context);
  errno = SavedErrno;
}

/// Applies protection `Prot` to pages [First, Last] of UM block `Block`.
void protectPages(uint64_t Block, unsigned First, unsigned Last, int Prot) {
  mprotect(reinterpret_cast<void *>(Block * kBlockBytes + uint64_t{First} * kPageBytes),
           uint64_t{Last - First + 1} * kPageBytes, Prot);
}

int protOf(const Model::HostProtection &P, unsigned Page) {
  const uint32_t Bit = uint32_t{1} << Page;
  if (P.None & Bit)
    return PROT_NONE;
  if (P.ReadOnly & Bit)
    return PROT_READ;
  return PROT_READ | PROT_WRITE;
}

} // namespace

ModelLock::ModelLock(Model &Mod) : M(Mod) {
  M.Mu.lock();
  ++LockDepth;
}

ModelLock::~ModelLock() {
  if (--LockDepth == 0)
    M.syncProtection();
  M.Mu.unlock();
}

HostCodeScope::HostCodeScope(Model &M) : SavedDepth(LockDepth) {
  if (SavedDepth > 0)
    M.syncProtection();
  LockDepth = 0;
}

HostCodeScope::~HostCodeScope() { LockDepth = SavedDepth; }

void Model::startHostFaults() {
  if (Installed.exchange(true))
    return;
  struct sigaction Action {};
  Action.sa_sigaction = onFault;
  Action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&Action.sa_mask);
  if (sigaction(SIGSEGV, &Action, &Previous) != 0) {
    std::fprintf(stderr, "cuda stand-in: cannot handle SIGSEGV (%s): host accesses to managed "
                         "memory on the GPU are not seen\n",
                 std::strerror(errno));
    return;
  }
  Eng->setResidencyLog(&ResidencyLog);
  HostFaultsOn = true;
}

void Model::syncProtection() {
  if (!HostFaultsOn || (ResidencyLog.empty() && OpenedCount == 0 && !OpenedOverflow))
    return;
  std::vector<uint64_t> Blocks;
  Blocks.reserve(ResidencyLog.size() + OpenedCount);
  for (uint32_t B : ResidencyLog)
    Blocks.push_back(Eng->umBlockOf(B));
  ResidencyLog.clear();
  // Blocks the GPU's accesses opened are wholly unprotected now.
  for (size_t I = 0; I < OpenedCount; ++I) {
    Blocks.push_back(Opened[I]);
    Protected.erase(Opened[I]);
  }
  OpenedCount = 0;
  if (OpenedOverflow) {
    // Too many to list: any protected block may be open. Open them all and
    // protect them afresh.
    for (const auto &KV : Protected) {
      Blocks.push_back(KV.first);
      mprotect(reinterpret_cast<void *>(KV.first * kBlockBytes), kBlockBytes,
               PROT_READ | PROT_WRITE);
    }
    Protected.clear();
    OpenedOverflow = false;
  }
  std::sort(Blocks.begin(), Blocks.end());
  Blocks.erase(std::unique(Blocks.begin(), Blocks.end()), Blocks.end());
  for (uint64_t Block : Blocks) {
    if (!find(reinterpret_cast<const void *>(Block * kBlockBytes)))
      continue; // freed: its mapping is gone (forgetProtection)
    const uint32_t Dense = Eng->blockId(Block);
    const uint32_t Dup = Eng->hostDuplicateMask(Dense);
    const HostProtection Want{Eng->residentMask(Dense) & ~Dup, Dup};
    auto It = Protected.find(Block);
    const HostProtection Have = It == Protected.end() ? HostProtection{} : It->second;
    if (Want.None == Have.None && Want.ReadOnly == Have.ReadOnly)
      continue;
    // Runs of pages whose wanted protection differs from what they have.
    unsigned Page = 0;
    while (Page < kPagesPerBlock) {
      const int P = protOf(Want, Page);
      if (P == protOf(Have, Page)) {
        ++Page;
        continue;
      }
      unsigned Last = Page;
      while (Last + 1 < kPagesPerBlock && protOf(Want, Last + 1) == P &&
             protOf(Have, Last + 1) != P)
        ++Last;
      protectPages(Block, Page, Last, P);
      Page = Last + 1;
    }
    if (Want.None | Want.ReadOnly)
      Protected[Block] = Want;
    else if (It != Protected.end())
      Protected.erase(It);
  }
}

void Model::forgetProtection(uint64_t Address, uint64_t Bytes) {
  syncProtection();
  for (uint64_t Block = Address / kBlockBytes;
       Block < (Address + Bytes + kBlockBytes - 1) / kBlockBytes; ++Block)
    Protected.erase(Block);
}
