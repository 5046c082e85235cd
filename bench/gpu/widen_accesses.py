#!/usr/bin/env python3
"""A profile whose kernels each access the whole of every tensor they touch:

    widen_accesses.py PROFILE OUT

Each kernel's tensor accesses (Kernel.tensors) become one access per
allocation, from offset 0 over its whole size (the mode kept when the
accesses agree on it, else unspecified: read-write). Prints the tensor bytes
accessed an iteration before and after. What a plan would be if the access
sets held every page of the tensors they hold a part of (docs/results/gpu.md,
finding 12). Needs deepum.v1.profile_pb2 (bench/gpu/pb2.py).
"""
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pb2  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    profile_pb2 = pb2.load("profile_pb2")
    p = profile_pb2.Profile()
    p.ParseFromString(gzip.open(argv[0]).read())
    size = {a.id: a.size_bytes for a in p.allocations}
    before = after = 0
    for k in p.kernels:
        modes = {}
        for t in k.tensors:
            before += t.bytes
            m = modes.get(t.allocation_id)
            modes[t.allocation_id] = t.mode if m is None or m == t.mode else 0
        del k.tensors[:]
        for aid, mode in modes.items():
            t = k.tensors.add()
            t.allocation_id, t.offset, t.bytes, t.mode = aid, 0, size[aid], mode
            after += size[aid]
    n = max(len(p.iterations), 1)
    print(f"tensor bytes accessed an iteration: {before / n / 2**30:.1f} GiB recorded, "
          f"{after / n / 2**30:.1f} GiB widened to whole tensors")
    with gzip.open(argv[1], "wb") as f:
        f.write(p.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
