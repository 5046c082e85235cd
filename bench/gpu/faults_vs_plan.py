#!/usr/bin/env python3
"""Where the demand faults of a replayed plan come from:

    faults_vs_plan.py RESULTS_DIR REPLAY_PROFILE PLAN [REPLAY_PROFILE PLAN ...]

Each REPLAY_PROFILE (relative to RESULTS_DIR) is a natural profile of a run
replaying PLAN (bench/gpu/run.sh replay_profile). Every fault record inside
a recorded iteration is set against the plan at the faulting kernel's
position (the replay's iterations have the plan's launches, position for
position; the arena's base is found from the placements): whether the
kernel's access set in the plan holds the faulted 2 MiB block, and whether
the plan's actions leave the block on the GPU there (prefetched at this very
position, or earlier) or away (evicted or discarded after an earlier use).
Prints one Markdown row per pair (docs/results/gpu.md quotes it).

Needs deepum.v1.profile_pb2 and plan_pb2 from the build tree
(DEEPUM_PROFILE_PB2_DIR, else build/python/gen).
"""
import collections
import gzip
import sys
from pathlib import Path

BLOCK_SHIFT = 21  # 2 MiB


def load_pb2():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pb2  # noqa: E402
    return pb2.load("plan_pb2"), pb2.load("profile_pb2")


def arena_base(profile, plan):
    """The address of arena offset 0: the commonest address - offset over the
    last allocations and the placements of their size."""
    offsets = collections.defaultdict(list)
    for pl in plan.layout.placements:
        offsets[pl.size_bytes].append(pl.offset)
    votes = collections.Counter()
    for a in list(profile.allocations)[-300:]:
        for o in offsets.get(a.size_bytes, [])[:50]:
            votes[a.address - o] += 1
    return votes.most_common(1)[0][0]


def plan_state(plan):
    """Per position: {block: (on the GPU?, position of its last prefetch)} in
    the steady state, after the actions issued at that position."""
    n = len(plan.position_ids)
    at = collections.defaultdict(list)
    for a in plan.actions:
        if a.kind in (1, 2, 3):  # prefetch, evict, discard
            for r in a.ranges:
                for b in range(r.offset >> BLOCK_SHIFT, ((r.offset + r.bytes - 1) >> BLOCK_SHIFT) + 1):
                    at[a.position].append((a.kind, b))
    state, states = {}, [None] * n
    for sweep in range(2):  # the second sweep starts from the first's end: the steady state
        for pos in range(n):
            for kind, b in at[pos]:
                state[b] = (True, pos) if kind == 1 else (False, state.get(b, (False, None))[1])
            if sweep:
                states[pos] = dict(state)
    return states


def classify(profile, plan):
    n = len(plan.position_ids)
    base = arena_base(profile, plan)
    arena = plan.layout.arena_bytes
    states = plan_state(plan)
    chains = {c.position: set(c.blocks) for c in plan.block_chains}
    rows = collections.Counter()
    iterations = 0
    for it in profile.iterations:
        if it.kernel_count != n:
            continue
        iterations += 1
        for f in profile.faults:
            if f.kernel_index < 0 or not it.start_ns <= f.time_ns < it.end_ns:
                continue
            pos = f.kernel_index - it.first_kernel
            if not 0 <= pos < n:
                continue
            rows["all"] += 1
            if not base <= f.address < base + arena:
                rows["outside the arena"] += 1
                continue
            b = (f.address - base) >> BLOCK_SHIFT
            on_gpu, last = states[pos].get(b, (None, None))
            if b in chains.get(pos, ()):
                if on_gpu and last == pos:
                    rows["in access set, prefetched at this position"] += 1
                elif on_gpu:
                    rows["in access set, prefetched earlier"] += 1
                else:
                    rows["in access set, not prefetched"] += 1
            else:
                rows["not in access set, released by the plan" if on_gpu is False
                     else "not in access set, kept" if on_gpu else
                     "not in access set, never acted on"] += 1
    return iterations, rows


COLUMNS = ["in access set, prefetched at this position", "in access set, prefetched earlier",
           "in access set, not prefetched", "not in access set, released by the plan",
           "not in access set, kept", "not in access set, never acted on", "outside the arena"]


def cells(rows):
    """The share of the fault records in each column, as Markdown cells."""
    return " | ".join(f"{100 * rows[c] / rows['all']:.0f}%" for c in COLUMNS)


def main(argv):
    if len(argv) < 3 or len(argv) % 2 != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    plan_pb2, profile_pb2 = load_pb2()
    results = Path(argv[0])
    print("| replay profile | iterations | fault records an iteration | "
          + " | ".join(COLUMNS) + " |")
    print("|---|---:|---:|" + "---:|" * len(COLUMNS))
    for prof_path, plan_path in zip(argv[1::2], argv[2::2]):
        profile = profile_pb2.Profile()
        profile.ParseFromString(gzip.open(results / prof_path).read())
        plan = plan_pb2.Plan()
        plan.ParseFromString((results / plan_path).read_bytes())
        iterations, rows = classify(profile, plan)
        if not iterations:
            print(f"{prof_path}: no iteration with the plan's {len(plan.position_ids)} launches",
                  file=sys.stderr)
            return 1
        print(f"| {prof_path} | {iterations} | {rows['all'] / iterations:.0f} | {cells(rows)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
