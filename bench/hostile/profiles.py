#!/usr/bin/env python3
"""Writes valid profiles built to make flattening them costly, for docs/hostile-input.md.

Each passes validation (no live allocations overlap, every block access lies inside an
allocation), yet multiplies two sizes a file can make large:

  shared.pb   20,000 launches without tensor data over one 2 MiB block that 16,384 live
              allocations of 128 bytes share: every launch touches every allocation
              (launches x allocations sharing a block).
  spread.pb   1,000 launches over 20 blocks each, 20,000 in all, and 1,000 allocations made
              one after another during the iteration, each over all 20,000 blocks (allocation
              events x blocks under each).

Usage: bench/hostile/profiles.py OUTDIR   (after `make`: it reads the build's profile schema)
Then, for example:
  /usr/bin/time -f '%e s %M KB' build/tools/deepum-sim OUTDIR/shared.pb --policy um --gpu-memory 64MiB
  /usr/bin/time -f '%e s %M KB' build/tools/deepum-plan OUTDIR/shared.pb -o /tmp/p.pb --gpu-memory 64MiB
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from deepum_trace import pb  # noqa: E402

MIB = 1 << 20
BASE = 1 << 40


def profile():
    p = pb.load().Profile()
    p.format_version = 1
    p.producer = "bench/hostile/profiles.py"
    p.um_block_bytes = 2 * MIB
    return p


def kernel(p, start_ns, end_ns):
    k = p.kernels.add()
    k.name = "k"
    k.start_ns, k.end_ns = start_ns, end_ns
    k.grid.x = k.grid.y = k.grid.z = 1
    k.block.x, k.block.y, k.block.z = 256, 1, 1
    return k


def shared(launches=20000, allocations=16384):
    m = pb.load()
    p = profile()
    for i in range(allocations):
        a = p.allocations.add()
        a.id, a.address, a.size_bytes = i + 1, BASE + i * 128, 128
        a.role = m.ALLOCATION_ROLE_PARAMETER
    for i in range(launches):
        b = kernel(p, i * 10000, i * 10000 + 10000).blocks.add()
        b.block, b.mode = BASE // (2 * MIB), m.ACCESS_MODE_READ_WRITE
    return p


def spread(launches=1000, blocks=20000):
    m = pb.load()
    p = profile()
    step = 100000
    per = blocks // launches
    for i in range(launches):
        a = p.allocations.add()
        a.id, a.address, a.size_bytes = i + 1, BASE, blocks * 2 * MIB
        a.alloc_time_ns = i * step + 1
        if i + 1 < launches:
            a.freed, a.free_time_ns = True, (i + 1) * step + 1
        k = kernel(p, i * step + 10, i * step + 1000)
        for j in range(per):
            b = k.blocks.add()
            b.block, b.mode = BASE // (2 * MIB) + i * per + j, m.ACCESS_MODE_READ
    return p


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[0] + "\nusage: profiles.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in (("shared.pb", shared), ("spread.pb", spread)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(make().SerializeToString())
        print(os.path.join(out, name))


if __name__ == "__main__":
    main()
