#!/usr/bin/env python3
"""How much a measured access-set profile's iterations disagree, and what
planning with their union does to the faults of a replay:

    access_noise.py TOOLS_DIR [RESULTS_DIR]

On tests/data/h100-resnet50-b64.profile.pb.gz (call3's access-set profile,
two iterations): per position, each allocation's recorded byte ranges in one
iteration against the other's (window allocations matched by the order they
were allocated in within the iteration and by size, persistent ones by
identity; the planner matches them the same way), summed in GiB. Then the plan
deepum-plan makes today from that profile with call9's options (call5's
--mode kernels times and calibration, the half budget), whose access sets are
the union of the two iterations, set against call9's replay profile beside
the plan call9 ran (made from the reference iteration alone) by
faults_vs_plan.py's classification. The layouts must agree, or the fault
addresses would not map. RESULTS_DIR defaults to
bench/gpu/results/2026-11-27-h100. Prints Markdown (docs/results/gpu.md,
finding 12, quotes it).

Needs deepum.v1.profile_pb2 and plan_pb2 from the build tree
(DEEPUM_PROFILE_PB2_DIR, else build/python/gen).
"""
import collections
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults_vs_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "tests/data/h100-resnet50-b64.profile.pb.gz"
KERNELS = "call5/resnet50.kernels.pb.gz"
DEVICE_FILE = "call5/calibrate.device.json"
BUDGET = "3711959040"
REPLAY = "call9/resnet50.replay-half.profile.pb.gz"
RAN = "call9/resnet50.half.plan.pb"
GIB = float(1 << 30)


def merged(ranges):
    out = []
    for begin, end in sorted(ranges):
        if out and begin <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([begin, end])
    return out


def overlap(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def iteration_ranges(profile, it, order):
    """Per position: {allocation key: merged byte ranges}, the key being
    ('p', id) for an allocation made before the iteration, else ('w', the
    order it was allocated in within the iteration, size)."""
    out = []
    for k in range(it.first_kernel, it.first_kernel + it.kernel_count):
        per = collections.defaultdict(list)
        for t in profile.kernels[k].tensors:
            a = order.get(t.allocation_id)
            per[a if a else ("p", t.allocation_id)].append((t.offset, t.offset + t.bytes))
        out.append({key: merged(r) for key, r in per.items()})
    return out


def noise(profile):
    its = list(profile.iterations)
    if len(its) != 2 or its[0].kernel_count != its[1].kernel_count:
        raise SystemExit(f"{PROFILE}: expected two iterations of one launch sequence")
    per_it = []
    for it in its:
        made = sorted((a for a in profile.allocations if it.start_ns <= a.alloc_time_ns < it.end_ns),
                      key=lambda a: (a.alloc_time_ns, a.id))
        order = {a.id: ("w", rank, a.size_bytes) for rank, a in enumerate(made)}
        per_it.append(iteration_ranges(profile, it, order))
    first = second = both = 0
    for x, y in zip(*per_it):
        first += sum(e - b for r in x.values() for b, e in r)
        second += sum(e - b for r in y.values() for b, e in r)
        both += sum(overlap(r, y[key]) for key, r in x.items() if key in y)
    return first, second, both


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tools = Path(argv[0])
    results = Path(argv[1] if len(argv) == 2 else ROOT / "bench/gpu/results/2026-11-27-h100")
    plan_pb2, profile_pb2 = faults_vs_plan.load_pb2()
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.open(PROFILE).read())
    first, second, both = noise(profile)
    print("| iteration 0, GiB | iteration 1, GiB | in both, GiB | in their union, GiB |")
    print("|---:|---:|---:|---:|")
    print(f"| {first / GIB:.1f} | {second / GIB:.1f} | {both / GIB:.1f} | "
          f"{(first + second - both) / GIB:.1f} |")
    print()
    with tempfile.TemporaryDirectory() as work:
        union_path = Path(work) / "union.plan.pb"
        out = subprocess.run(
            [str(tools / "deepum-plan"), str(PROFILE), "--compute-from", str(results / KERNELS),
             "--gpu-memory", BUDGET, "--device", "h100-sxm", "--device-file",
             str(results / DEVICE_FILE), "-o", str(union_path)],
            check=True, capture_output=True, text=True).stdout
        ran, union = plan_pb2.Plan(), plan_pb2.Plan()
        ran.ParseFromString((results / RAN).read_bytes())
        union.ParseFromString(union_path.read_bytes())
        if ran.layout != union.layout:
            raise SystemExit("the plan made today lays the arena out unlike call9's")
        replay = profile_pb2.Profile()
        replay.ParseFromString(gzip.open(results / REPLAY).read())
        columns = faults_vs_plan.COLUMNS
        print("| plan | blocks fetched an iteration | predicted ms | fault records an iteration | "
              + " | ".join(columns) + " |")
        print("|---|---:|---:|---:|" + "---:|" * len(columns))
        for name, plan in ((f"{RAN} (the reference iteration's access sets)", ran),
                           ("today's (the union of both iterations')", union)):
            iterations, rows = faults_vs_plan.classify(replay, plan)
            fetched = sum(r.bytes for a in plan.actions if a.kind == 1 for r in a.ranges) >> 21
            print(f"| {name} | {fetched} | {plan.metadata.predicted_iteration_us / 1e3:.1f} | "
                  f"{rows['all'] / iterations:.0f} | {faults_vs_plan.cells(rows)} |")
        print()
        for line in out.splitlines():
            if "taken from the other iterations" in line:
                print("deepum-plan today: " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
