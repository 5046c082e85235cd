#!/usr/bin/env python3
"""make demo's last step: iteration time against oversubscription, every policy.

usage: demo_plot.py OUT.png RATIO=COMPARE.json [RATIO=COMPARE.json ...]

Each COMPARE.json is `deepum-sim --compare --json` at one ratio. Prints a table
(one row per ratio, one column per policy, milliseconds per iteration) and
draws the same figure into OUT.png; without matplotlib the table alone.
"""
import json
import sys

ORDER = ["ideal", "um", "deepum", "swap-layer", "swap-opt", "plan"]


def label(row):
    replay = row.get("plan_replay")
    return row["policy"] + (f" ({replay} replay)" if replay else "")


def load(args):
    runs = []
    for arg in args:
        ratio, path = arg.split("=", 1)
        with open(path) as f:
            rows = json.load(f)
        runs.append((float(ratio), {r["policy"]: r for r in rows}))
    runs.sort(key=lambda r: r[0])
    return runs


def table(runs, policies):
    first = runs[0][1][policies[0]]
    print(f"iteration time (ms) of {first['model']} on {first['device']}, "
          f"footprint {first['footprint_bytes'] / 2**30:.2f} GiB")
    print(f"{'ratio':>6} {'GPU memory':>11} " + " ".join(f"{p:>11}" for p in policies))
    for ratio, rows in runs:
        gib = next(iter(rows.values()))["gpu_memory_bytes"] / 2**30
        cells = [f"{rows[p]['iteration_us'] / 1e3:11.1f}" if p in rows else f"{'-':>11}"
                 for p in policies]
        print(f"{ratio:5.2f}x {gib:8.2f} GiB " + " ".join(cells))
    worst = max(runs, key=lambda r: r[0])
    if "plan" in worst[1] and "um" in worst[1]:
        rows = worst[1]
        print(f"at {worst[0]:g}x: plan {rows['um']['iteration_us'] / rows['plan']['iteration_us']:.2f}x "
              f"faster than um, {rows['plan']['slowdown']:.2f}x ideal")


def plot(out, runs, policies):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib is missing: no {out}; tools/setup.sh installs python3-matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for p in policies:
        points = [(ratio, rows[p]["iteration_us"] / 1e3) for ratio, rows in runs if p in rows]
        if not points:
            continue
        name = label(next(rows[p] for _, rows in runs if p in rows))
        style = "--" if p == "ideal" else "-"
        ax.plot([x for x, _ in points], [y for _, y in points], style, marker="o", label=name)
    first = runs[0][1][policies[0]]
    ax.set_xlabel("oversubscription (footprint / GPU memory)")
    ax.set_ylabel("iteration time (ms, simulated)")
    ax.set_title(f"{first['model']} on {first['device']}: deepum-sim, every policy")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    print(f"plot: {out}")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = load(argv[2:])
    seen = set().union(*(rows.keys() for _, rows in runs))
    policies = [p for p in ORDER if p in seen] + sorted(seen - set(ORDER))
    table(runs, policies)
    plot(argv[1], runs, policies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
