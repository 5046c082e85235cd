import random
import unittest

from deepum_trace.placement import (BASE_ADDRESS, MIB, CachingAllocator, round_size,
                                    segment_size)


class RoundingTest(unittest.TestCase):
    def test_round_size(self):
        self.assertEqual(round_size(1), 512)
        self.assertEqual(round_size(512), 512)
        self.assertEqual(round_size(513), 1024)
        self.assertEqual(round_size(3 * MIB + 1), 3 * MIB + 512)

    def test_segment_size(self):
        self.assertEqual(segment_size(512), 2 * MIB)
        self.assertEqual(segment_size(1 * MIB), 2 * MIB)           # small pool
        self.assertEqual(segment_size(1 * MIB + 512), 20 * MIB)    # 1-10 MiB
        self.assertEqual(segment_size(10 * MIB - 512), 20 * MIB)
        self.assertEqual(segment_size(10 * MIB), 10 * MIB)         # rounded to 2 MiB
        self.assertEqual(segment_size(11 * MIB), 12 * MIB)


class CachingAllocatorTest(unittest.TestCase):
    def test_small_requests_share_a_2mib_segment(self):
        a = CachingAllocator()
        x, y = a.malloc(1000), a.malloc(100)
        self.assertEqual(x, BASE_ADDRESS)
        self.assertEqual(y, BASE_ADDRESS + 1024)     # 1000 rounded to 1024
        self.assertEqual(a.segments, [(BASE_ADDRESS, 2 * MIB)])

    def test_best_fit_and_split(self):
        a = CachingAllocator()
        blk_a = a.malloc(4096)
        a.malloc(512)
        blk_c = a.malloc(8192)
        a.malloc(512)
        a.free(blk_a)
        a.free(blk_c)
        # 2048 fits both freed blocks and the segment's tail; the smallest (A) wins and is split.
        self.assertEqual(a.malloc(2048), blk_a)
        self.assertIn((blk_a + 2048, 2048), a.free_blocks())
        # 6000 no longer fits A's remainder; C (8192) is the best fit.
        self.assertEqual(a.malloc(6000), blk_c)
        self.assertEqual(len(a.segments), 1)

    def test_reuse_and_merge(self):
        a = CachingAllocator()
        x = a.malloc(3000)
        y = a.malloc(5000)
        a.free(x)
        a.free(y)
        # Both blocks merged back with the segment's tail into one free block.
        self.assertEqual(a.free_blocks(), [(BASE_ADDRESS, 2 * MIB)])
        self.assertEqual(a.malloc(8000), x)
        self.assertEqual(len(a.segments), 1)

    def test_large_pool_segments_and_split_threshold(self):
        a = CachingAllocator()
        small = a.malloc(100)
        x = a.malloc(3 * MIB)                 # new 20 MiB segment after the small one
        self.assertEqual(x, BASE_ADDRESS + 2 * MIB)
        self.assertEqual(a.segments[-1], (x, 20 * MIB))
        y = a.malloc(5 * MIB)                 # served from the 17 MiB remainder
        self.assertEqual(y, x + 3 * MIB)
        z = a.malloc(13 * MIB)                # >= 10 MiB, nothing cached fits: own segment
        self.assertEqual(a.segments[-1], (z, 14 * MIB))   # rounded up to 2 MiB
        # The 1 MiB left over is not worth splitting in the large pool (needs > 1 MiB).
        self.assertEqual(a.block_size(z), 14 * MIB)
        u = a.malloc(11 * MIB)                # best fit: the 12 MiB tail of the 20 MiB segment
        self.assertEqual(u, y + 5 * MIB)
        self.assertEqual(a.block_size(u), 12 * MIB)
        a.free(z)
        w = a.malloc(13 * MIB + 512)          # reuses the cached 14 MiB block
        self.assertEqual(w, z)
        self.assertEqual(len(a.segments), 3)
        a.free(small)
        # A large request never takes small-pool memory.
        self.assertNotEqual(a.malloc(2 * MIB), BASE_ADDRESS)

    def test_small_pool_never_serves_large(self):
        a = CachingAllocator()
        x = a.malloc(2 * MIB)    # large pool, 20 MiB segment
        a.malloc(512)            # small pool, its own 2 MiB segment
        self.assertEqual(len(a.segments), 2)
        a.free(x)
        self.assertEqual(a.malloc(512), BASE_ADDRESS + 20 * MIB + 512)

    def test_free_of_unknown_address(self):
        with self.assertRaises(ValueError):
            CachingAllocator().free(BASE_ADDRESS)

    def test_random_sequence_keeps_invariants(self):
        rng = random.Random(7)
        a = CachingAllocator()
        live = {}
        sizes = [rng.choice([rng.randint(1, 4096), rng.randint(4096, 1 * MIB),
                             rng.randint(1 * MIB, 12 * MIB), rng.randint(12 * MIB, 40 * MIB)])
                 for _ in range(1500)]
        for size in sizes:
            if live and rng.random() < 0.45:
                a.free(live.pop(rng.choice(sorted(live))))
            addr = a.malloc(size)
            self.assertNotIn(addr, live)
            self.assertGreaterEqual(a.block_size(addr), round_size(size))
            self.assertEqual(a.block_size(addr) % 512, 0)
            live[addr] = addr
            self._check(a)

    def _check(self, a):
        segments = sorted(a.segments)
        for (s0, n0), (s1, _) in zip(segments, segments[1:]):
            self.assertLessEqual(s0 + n0, s1, "segments overlap")
        for s, _ in segments:
            self.assertEqual(s % (2 * MIB), 0)
        # Live and free blocks tile every segment exactly: no overlap, no gap.
        blocks = sorted(a.live_blocks() + a.free_blocks())
        for (b0, n0), (b1, _) in zip(blocks, blocks[1:]):
            self.assertLessEqual(b0 + n0, b1, "blocks overlap")
        self.assertEqual(sum(n for _, n in blocks), a.reserved_bytes)
        for b, n in blocks:
            self.assertTrue(any(s <= b and b + n <= s + m for s, m in segments))
        self.assertEqual(sum(n for _, n in a.live_blocks()), a.allocated_bytes)


if __name__ == "__main__":
    unittest.main()
