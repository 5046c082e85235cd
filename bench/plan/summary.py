#!/usr/bin/env python3
"""The figures of plan.md's "Where the plan still loses time", from plan.csv.

  python3 bench/plan/summary.py docs/results/plan.csv

Prints the section's opening paragraphs with every number taken from the CSV that
deepum-plan-results wrote in the same run, so the prose cannot drift from the tables. The
judgement is the targets table's (bench/plan/PlanResults.cpp, judgeRow): the tightest lower
bound of a row is max(ideal, bound, cut) of its `um` run; a baseline is faster when the plan
takes over 1.0001 times its time.
"""
import csv
import math
import sys

DEVICES = ("v100-pcie-16gb", "h100-pcie", "h100-sxm")
BASELINES = ("um", "deepum", "deepum-tuned", "swap-layer", "swap-opt", "offload")


def competes(runs, baseline):
    """offload copies out every saved tensor whatever the capacity: where its own peak exceeds
    the capacity the system runs out of memory, and it is no competitor in that row."""
    if baseline != "offload":
        return True
    return int(runs["offload"]["policy_peak_bytes"]) <= int(runs["offload"]["capacity_bytes"])


def load(path):
    """{(device, model, ratio): {policy: row}}"""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["device"], r["model"], float(r["ratio"]))
            rows.setdefault(key, {})[r["policy"]] = r
    return rows


def us(row, column="iteration_us"):
    return float(row[column])


def lower(runs):
    um = runs["um"]
    return max(us(um, "ideal_us"), us(um, "bound_us"), us(um, "cut_bound_us"))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def judge(rows, device):
    """The targets table's figures for one device."""
    at_two = {k: v for k, v in rows.items() if k[0] == device and k[2] == 2.0}
    every = {k: v for k, v in rows.items() if k[0] == device}
    over_lower = {k: us(v["plan"]) / lower(v) for k, v in every.items()}
    furthest = max(over_lower, key=over_lower.get)
    judged, leads = [], []
    for k, v in at_two.items():
        plan = us(v["plan"])
        if us(v["deepum-tuned"]) / lower(v) > 1.3:
            judged.append(us(v["deepum-tuned"]) / plan)
        fastest = min((b for b in BASELINES if competes(v, b)), key=lambda b: us(v[b]))
        leads.append((us(v[fastest]) / plan, k[1], fastest))
    slower = sum(any(us(v["plan"]) > us(v[b]) * 1.0001 for b in BASELINES if competes(v, b))
                 for v in every.values())
    beaten = {}  # baseline -> rows (every ratio) where it beats the plan
    for k, v in every.items():
        for b in BASELINES:
            if competes(v, b) and us(v["plan"]) > us(v[b]) * 1.0001:
                beaten.setdefault(b, []).append(k)
    return {
        "gm": geomean([over_lower[k] for k in at_two]),
        "furthest": (furthest[1], furthest[2], over_lower[furthest]),
        "rows": len(every),
        "slower": slower,
        "vs_tuned": geomean(judged), "judged": len(judged),
        "lead": geomean([l for l, _, _ in leads]), "least": min(leads),
        "over_lower": over_lower,
        "beaten": beaten,
    }


def main(path):
    rows = load(path)
    devices = [d for d in DEVICES if any(k[0] == d for k in rows)]
    j = {d: judge(rows, d) for d in devices}

    def pair(model, ratio):
        return " / ".join(f"{j[d]['over_lower'][(d, model, ratio)]:.3f}" for d in devices)

    def beaten(d):
        if not j[d]["beaten"]:
            return "no baseline is faster than the plan in any row"
        return "; ".join(f"{b} is faster in {len(ks)} of {j[d]['rows']} rows"
                         for b, ks in sorted(j[d]["beaten"].items()))

    per_device = " ".join(
        f"On {d}: plan / tightest lower bound at 2x {j[d]['gm']:.3f} geomean, furthest "
        f"{j[d]['furthest'][0]} at {j[d]['furthest'][1]:g}x ({j[d]['furthest'][2]:.3f}); slower "
        f"than some baseline in {j[d]['slower']} of {j[d]['rows']} rows ({beaten(d)}); at 2x "
        f"{'ahead of' if j[d]['least'][0] >= 1 else 'behind'} the fastest baseline of each row by "
        f"{j[d]['lead']:.2f}x geomean, the "
        f"{'least lead' if j[d]['least'][0] >= 1 else 'largest loss'} {j[d]['least'][0]:.3f} "
        f"({j[d]['least'][1]} against {j[d]['least'][2]})."
        for d in devices)
    print(f"""The targets table above judges each target (a baseline is faster when the plan takes \
over 1.0001 times its time; offload counts only where its own peak fits). {per_device}""")
    print()
    print(f"""Plan / tightest lower bound of the rows discussed below ({' / '.join(devices)}): at \
2x resnet50 {pair('resnet50', 2.0)}, gpt2-medium {pair('gpt2-medium', 2.0)}, bart-large \
{pair('bart-large', 2.0)}; vgg16 at 3x {pair('vgg16', 3.0)}, whose cut bound is \
{' and '.join(f"{us(rows[(d, 'vgg16', 3.0)]['um'], 'cut_bound_us') / 1e3:.1f} ms" for d in devices)}.""")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py PLAN_CSV")
    main(sys.argv[1])
