"""Plot docs/results/plan.csv: iteration time / max(ideal, bound) per ratio, one panel per
device, one line per policy (geomean over the models), the plan's line in bold."""
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    rows = list(csv.DictReader(open(csv_path)))
    devices = sorted({r["device"] for r in rows})
    fig, axes = plt.subplots(1, len(devices), figsize=(6 * len(devices), 4.5), squeeze=False)
    for ax, device in zip(axes[0], devices):
        by = defaultdict(list)  # (policy, ratio) -> normalised times
        lower = defaultdict(dict)  # ratio -> model -> max(ideal, bound, cut) / max(ideal, bound)
        for r in rows:
            if r["device"] != device:
                continue
            best = max(float(r["ideal_us"]), float(r["bound_us"]))
            by[(r["policy"], float(r["ratio"]))].append(float(r["iteration_us"]) / best)
            lower[float(r["ratio"])][r["model"]] = max(best, float(r["cut_bound_us"])) / best
        policies = sorted({p for p, _ in by})
        ratios = sorted({x for _, x in by})
        for policy in policies:
            ys = [math.exp(sum(map(math.log, by[(policy, x)])) / len(by[(policy, x)]))
                  for x in ratios]
            bold = policy == "plan"
            ax.plot(ratios, ys, marker="o", linewidth=3 if bold else 1.2,
                    label=policy, zorder=3 if bold else 2)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="max(ideal, bound)")
        ax.plot(ratios, [math.exp(sum(map(math.log, lower[x].values())) / len(lower[x]))
                         for x in ratios],
                color="black", linestyle="-.", linewidth=1, label="lower bound (cut)")
        ax.axhline(1.1, color="grey", linestyle=":", linewidth=1, label="target 1.10x")
        ax.set_title(device)
        ax.set_xlabel("oversubscription (footprint / capacity)")
        ax.set_ylabel("iteration time / max(ideal, bound), geomean over models")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
