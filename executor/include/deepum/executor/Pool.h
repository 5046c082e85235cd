//===- deepum/executor/Pool.h - Stream-ordered pool of managed memory ------===//
//
// PyTorch's pluggable-allocator mode does no caching, so the executor pools.
// Stream-ordering contract (as in PyTorch's caching allocator and RMM): a block
// freed with stream S may be handed out again at once for S, because S's later
// work runs after the work that used the block. For another stream T it is
// handed out only after an event recorded on S has completed. The pool never
// waits on the CPU for such an event: if none has completed, it grows instead.
//
// Segments come from Backend::allocateManaged (managed memory: nothing runs
// out of GPU memory while the host has room). Blocks are split on allocation;
// adjacent free blocks of the same stream are coalesced lazily, when a request
// finds no fit, so the common malloc/free pair touches one ordered set and one
// hash table (the 200 ns budget).
//
// Thread safety: all members may be called concurrently (one mutex per pool).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_POOL_H
#define DEEPUM_EXECUTOR_POOL_H

#include "deepum/executor/Backend.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace deepum::executor {

/// 512 B: PyTorch's rounding; keeps 256 B alignment for vectorised kernels.
inline constexpr uint64_t kPoolRounding = 512;
/// Requests below 1 MiB share 2 MiB segments; below 10 MiB, 20 MiB segments;
/// larger ones get a segment of their own rounded to 2 MiB (PyTorch's classes).
inline constexpr uint64_t kSmallRequest = uint64_t{1} << 20;
inline constexpr uint64_t kMediumRequest = uint64_t{10} << 20;

struct PoolStats {
  uint64_t Allocations = 0;
  uint64_t Frees = 0;
  uint64_t BytesInUse = 0; ///< Rounded bytes of live blocks.
  uint64_t PeakBytesInUse = 0;
  uint64_t BytesReserved = 0; ///< Bytes of all segments.
  uint64_t Segments = 0;
  uint64_t CrossStreamReuses = 0;
  uint64_t Failures = 0; ///< Requests that could not be served.
};

class DevicePool {
public:
  DevicePool(Backend &B, int Device);
  ~DevicePool();
  DevicePool(const DevicePool &) = delete;
  DevicePool &operator=(const DevicePool &) = delete;

  /// A block of at least `Bytes` usable by work on `Stream`; nullptr for 0
  /// bytes or when managed memory is exhausted.
  void *allocate(uint64_t Bytes, StreamHandle Stream);
  /// Returns a block. False when `Ptr` is not a live block of this pool.
  /// `Stream` is the stream its last use was ordered on (PyTorch passes the
  /// allocation stream).
  bool deallocate(void *Ptr, StreamHandle Stream);
  /// Rounded size of a live block (0 when unknown).
  uint64_t blockSize(const void *Ptr) const;

  /// Releases every segment with no live block back to the backend.
  void releaseCached();
  PoolStats stats() const;

private:
  struct Block {
    uintptr_t Addr = 0;
    uint64_t Size = 0;
    Block *Prev = nullptr, *Next = nullptr; // address neighbours in the segment
    StreamHandle Stream = 0;                // owner while free
    enum class Where : uint8_t { Live, StreamFree, AnyFree, Pending } Place = Where::Live;
    bool SegmentHead = false; // first block of a segment (owns the allocation)
  };
  struct BySize {
    bool operator()(const Block *A, const Block *B) const {
      return A->Size != B->Size ? A->Size < B->Size : A->Addr < B->Addr;
    }
  };
  using FreeSet = std::set<Block *, BySize>;
  struct StreamBins {
    StreamHandle Stream;
    FreeSet Free;
  };
  struct PendingBatch {
    EventHandle Event;
    std::vector<Block *> Blocks;
  };

  Block *newBlock();
  void recycle(Block *B);
  FreeSet &binsFor(StreamHandle S);
  Block *takeFrom(FreeSet &Set, uint64_t Size);
  Block *splitAndMark(Block *B, uint64_t Size, StreamHandle S);
  void coalesce(FreeSet &Set, Block::Where Place);
  void reclaimOtherStreams(StreamHandle S);
  bool pollPending();
  Block *grow(uint64_t Size, StreamHandle S);
  void releaseCachedLocked();
  void eraseFree(Block *B);

  Backend &Back;
  const int Device;
  mutable std::mutex Mu;
  std::vector<StreamBins> Bins; // few streams: a vector beats a map
  size_t LastBin = 0;
  FreeSet AnyStream; // freed and known complete: any stream may take
  std::vector<PendingBatch> Pending;
  std::vector<EventHandle> SpareEvents;
  std::unordered_map<uintptr_t, Block *> LiveBlocks;
  std::deque<Block> BlockStore;
  std::vector<Block *> SpareBlocks;
  PoolStats Stats;
  std::atomic<bool> FailureLogged{false};
};

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_POOL_H
