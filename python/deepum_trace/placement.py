"""Address placement: an emulation of PyTorch's CUDA caching allocator.

The tracer runs on a CPU, so tensors have no device addresses. This module gives them the
addresses PyTorch's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp, default
settings, one stream) would give them, because UM block sharing and reuse depend on them:

- every request is rounded up to a multiple of 512 bytes (at least 512);
- requests of at most 1 MiB come from the small pool, whose segments are 2 MiB;
- larger requests come from the large pool; a new segment is 20 MiB for requests under
  10 MiB, otherwise the request rounded up to a multiple of 2 MiB;
- a request takes the best-fitting cached free block of its pool (smallest size, then
  lowest address) and splits it when the remainder is worth keeping (>= 512 bytes in the
  small pool, > 1 MiB in the large pool); only when none fits is a new segment mapped;
- freed blocks go back to the cache and merge with free neighbours in their segment;
  segments are never released (no memory pressure in a derived profile).

Segments are laid out at 2 MiB-aligned virtual addresses upwards from BASE_ADDRESS, as
cudaMalloc returns 2 MiB-aligned ranges for allocations of this size.

It is one self-contained class so that a later executor allocator (arena offsets from a
plan) can replace it behind the same malloc/free interface.
"""

import bisect

KIB = 1024
MIB = 1024 * KIB

BASE_ADDRESS = 0x7F0000000000
SEGMENT_ALIGNMENT = 2 * MIB
MIN_BLOCK_SIZE = 512          # kMinBlockSize: rounding unit and smallest split remainder
SMALL_SIZE = 1 * MIB          # kSmallSize: largest request served by the small pool
SMALL_BUFFER = 2 * MIB        # kSmallBuffer: small-pool segment size
LARGE_BUFFER = 20 * MIB       # kLargeBuffer: segment for 1-10 MiB requests
MIN_LARGE_ALLOC = 10 * MIB    # kMinLargeAlloc
ROUND_LARGE = 2 * MIB         # kRoundLarge


def round_size(size):
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return -(-size // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE


def segment_size(rounded):
    if rounded <= SMALL_SIZE:
        return SMALL_BUFFER
    if rounded < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-rounded // ROUND_LARGE) * ROUND_LARGE


class _Block:
    __slots__ = ("address", "size", "segment", "allocated", "prev", "next", "small")

    def __init__(self, address, size, segment, small):
        self.address = address
        self.size = size
        self.segment = segment
        self.small = small
        self.allocated = False
        self.prev = None
        self.next = None


class CachingAllocator:
    """malloc(size) -> address and free(address), placed as the CUDA caching allocator would."""

    def __init__(self, base=BASE_ADDRESS):
        assert base % SEGMENT_ALIGNMENT == 0
        self._next_segment = base
        self.segments = []          # (address, size), in mapping order
        self._free = {True: [], False: []}   # small? -> sorted [(size, address)]
        self._blocks = {}           # address -> _Block, for every block (free or not)
        self._allocated = {}        # address -> _Block, allocated blocks only
        self.allocated_bytes = 0    # sum of rounded block sizes handed out
        self.reserved_bytes = 0     # sum of segment sizes
        self.peak_reserved_bytes = 0

    def malloc(self, size):
        if size <= 0:
            raise ValueError("allocation size must be positive")
        rounded = round_size(size)
        small = rounded <= SMALL_SIZE
        block = self._take_best_fit(rounded, small)
        if block is None:
            block = self._map_segment(segment_size(rounded), small)
        remaining = block.size - rounded
        worth_splitting = remaining >= MIN_BLOCK_SIZE if small else remaining > SMALL_SIZE
        if worth_splitting:
            rest = _Block(block.address + rounded, remaining, block.segment, small)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = rounded
            self._blocks[rest.address] = rest
            self._insert_free(rest)
        block.allocated = True
        self._allocated[block.address] = block
        self.allocated_bytes += block.size
        return block.address

    def free(self, address):
        block = self._allocated.pop(address, None)
        if block is None:
            raise ValueError(f"free of an address that is not allocated: {address:#x}")
        block.allocated = False
        self.allocated_bytes -= block.size
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove_free(neighbour)
                block = self._merge(block, neighbour)
        self._insert_free(block)

    def block_size(self, address):
        """Size of the allocated block at address (the rounded request, or more when the
        remainder of a cached block was too small to split off)."""
        return self._allocated[address].size

    def live_blocks(self):
        return sorted((b.address, b.size) for b in self._allocated.values())

    def free_blocks(self):
        return sorted((addr, size) for pool in self._free.values() for size, addr in pool)

    # -- internals ---------------------------------------------------------------------

    def _take_best_fit(self, rounded, small):
        pool = self._free[small]
        i = bisect.bisect_left(pool, (rounded, 0))
        if i == len(pool):
            return None
        _, address = pool.pop(i)
        return self._blocks[address]

    def _map_segment(self, size, small):
        address = self._next_segment
        self._next_segment += -(-size // SEGMENT_ALIGNMENT) * SEGMENT_ALIGNMENT
        self.segments.append((address, size))
        self.reserved_bytes += size
        self.peak_reserved_bytes = max(self.peak_reserved_bytes, self.reserved_bytes)
        block = _Block(address, size, len(self.segments) - 1, small)
        self._blocks[address] = block
        return block

    def _insert_free(self, block):
        bisect.insort(self._free[block.small], (block.size, block.address))

    def _remove_free(self, block):
        pool = self._free[block.small]
        i = bisect.bisect_left(pool, (block.size, block.address))
        assert pool[i] == (block.size, block.address)
        del pool[i]

    def _merge(self, a, b):
        """Merge two adjacent free blocks of one segment; returns the surviving block."""
        first, second = (a, b) if a.address < b.address else (b, a)
        first.size += second.size
        first.next = second.next
        if second.next is not None:
            second.next.prev = first
        del self._blocks[second.address]
        return first
