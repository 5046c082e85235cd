#!/usr/bin/env python3
"""Variants of a prefetch plan that isolate its discards and populates (the
runs of docs/results/gpu.md, "Discarded data"):

    plan_variants.py DEEPUM_INSPECT PLAN OUTDIR

writes OUTDIR/nodiscard.plan.pb (the plan's discards left out),
OUTDIR/nopopulate.plan.pb (its prefetches of discarded blocks left out: the
kernels write them first) and OUTDIR/nodiscard-nopopulate.plan.pb (both).
A populate is a prefetch of a block whose previous action, cyclically by
position, is a discard. The plans are read and written by deepum-inspect
(JSON in between), so they pass the same validation as any plan.
"""
import collections
import copy
import json
import os
import subprocess
import sys
import tempfile

BLOCK = 2 << 20


def blocks(action):
    for r in action["ranges"]:
        first = int(r.get("offset", 0))
        size = int(r["bytes"])
        yield from range(first // BLOCK, (first + size + BLOCK - 1) // BLOCK)


def ranges_of(block_list, arena_bytes):
    """Whole blocks as ranges, the last clipped to the arena (as the planner's)."""
    out = []
    for b in sorted(block_list):
        if out and out[-1][0] + out[-1][1] == b * BLOCK:
            out[-1][1] += BLOCK
        else:
            out.append([b * BLOCK, BLOCK])
    return [{"offset": str(o), "bytes": str(min(n, arena_bytes - o))} for o, n in out]


def populates(actions):
    """(action index, block) of every prefetch that maps a discarded block."""
    events = collections.defaultdict(list)
    for i, a in enumerate(actions):
        for b in blocks(a):
            events[b].append((int(a.get("position", 0)), a["kind"], i))
    found = set()
    for b, seq in events.items():
        seq.sort()
        for j, (_, kind, i) in enumerate(seq):
            if kind == "ACTION_KIND_PREFETCH" and seq[j - 1][1] == "ACTION_KIND_DISCARD":
                found.add((i, b))
    return found


def variant(plan, drop_discards, drop_populates):
    actions = plan["actions"]
    arena_bytes = int(plan["layout"]["arena_bytes"])
    mapped = populates(actions)
    kept = []
    for i, a in enumerate(actions):
        if drop_discards and a["kind"] == "ACTION_KIND_DISCARD":
            continue
        if drop_populates and a["kind"] == "ACTION_KIND_PREFETCH":
            rest = [b for b in blocks(a) if (i, b) not in mapped]
            if not rest:
                continue
            a = dict(a, ranges=ranges_of(rest, arena_bytes))
        kept.append(a)
    out = copy.deepcopy(plan)
    out["actions"] = kept
    return out, len(mapped)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    inspect, plan_path, out_dir = argv
    os.makedirs(out_dir, exist_ok=True)
    text = subprocess.run([inspect, plan_path, "--dump", "json"], check=True,
                          capture_output=True, text=True).stdout
    plan = json.loads(text)
    with tempfile.TemporaryDirectory() as tmp:
        for name, discards, populates_too in (("nodiscard", True, False),
                                             ("nopopulate", False, True),
                                             ("nodiscard-nopopulate", True, True)):
            v, n = variant(plan, discards, populates_too)
            js = os.path.join(tmp, name + ".plan.json")
            with open(js, "w") as f:
                json.dump(v, f)
            out = os.path.join(out_dir, name + ".plan.pb")
            subprocess.run([inspect, js, "--convert", out], check=True, stdout=subprocess.DEVNULL)
            print(f"{out}: {len(v['actions'])} of {len(plan['actions'])} actions "
                  f"({n} populated blocks in the plan)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
