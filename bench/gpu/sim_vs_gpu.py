#!/usr/bin/env python3
"""deepum-sim against the GPU: each plan that ran on the H100, simulated on
the profile it was made from, beside its measured step time.

    sim_vs_gpu.py TOOLS_DIR [RESULTS_DIR]

TOOLS_DIR holds deepum-sim and deepum-plan; RESULTS_DIR defaults to
bench/gpu/results/2026-11-27-h100. The profile is tests/data/
h100-resnet50-b64.profile.pb.gz (ResNet-50, batch 64, access-set, recorded
in call3), its compute times tests/data/h100-resnet50-b64.kernels.pb.gz
(--mode kernels, call5), the device the built-in h100-sxm. Measured: the
median of the steady steps (bench/gpu/summarize.py) of every run of that
plan. Prints Markdown (docs/results/gpu.md quotes it), then the plan
deepum-plan makes for the same budget today and its simulated time.
"""
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize import WARMUP, step_times  # noqa: E402

PROFILE = "tests/data/h100-resnet50-b64.profile.pb.gz"
KERNELS = "tests/data/h100-resnet50-b64.kernels.pb.gz"

# (row, plan relative to the results, budget file, runs that replayed it)
ROWS = [
    ("fit plan (c)", "call3/resnet50.fit.plan.pb", "call3/resnet50.fit.budget",
     ["call3/resnet50.deepum-fit"]),
    ("demand, no prefetch (d)", "call3/resnet50.demand.plan.pb", "call3/resnet50.half.budget",
     ["call3/resnet50.deepum-demand", "call4/resnet50.demand-again"]),
    ("prefetch plan with discards (e)", "call3/resnet50.half.plan.pb",
     "call3/resnet50.half.budget",
     ["call3/resnet50.deepum-half", "call4/resnet50.half-again"]),
    ("  the same, replanned with --mode kernels times", "call5/resnet50.replan.plan.pb",
     "call5/resnet50.replan.budget", ["call5/resnet50.deepum-replan"]),
    ("  the same, its discards left out", "call4/nodiscard.plan.pb",
     "call3/resnet50.half.budget", ["call4/resnet50.nodiscard"]),
    ("  the same, its populates left out", "call4/nopopulate.plan.pb",
     "call3/resnet50.half.budget", ["call4/resnet50.nopopulate"]),
    ("prefetch plan keeping dead contents", "call7/resnet50.kept.plan.pb",
     "call7/resnet50.kept.budget", ["call6/resnet50.kept", "call8/resnet50.kept30"]),
]


def measured(results, run):
    r = json.loads((results / f"{run}.energy.json").read_text())
    times = step_times(r)[WARMUP:]
    return statistics.median(times) if times else None


def simulate(tools, plan, budget):
    out = subprocess.run(
        [str(tools / "deepum-sim"), PROFILE, "--compute-from", KERNELS, "--device", "h100-sxm",
         "--gpu-memory", str(budget), "--policy", "plan", "--plan", str(plan), "--json",
         "--quiet"], check=True, capture_output=True, text=True).stdout
    v = json.loads(out)
    return v["iteration_us"] / 1e3, v["faults"]


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tools = Path(argv[0])
    results = Path(argv[1] if len(argv) == 2 else "bench/gpu/results/2026-11-27-h100")
    print("| plan (ResNet-50, batch 64) | budget GB | simulated ms | measured ms (median of steady "
          "steps, per run) | simulated / measured |")
    print("|---|---:|---:|---:|---:|")
    for label, plan, budget_file, runs in ROWS:
        budget = int((results / budget_file).read_text())
        sim_ms, _ = simulate(tools, results / plan, budget)
        meds = [m for m in (measured(results, r) for r in runs) if m is not None]
        ratio = " / ".join(f"{sim_ms / m:.2f}" for m in meds)
        print(f"| {label} | {budget / 1e9:.2f} | {sim_ms:.1f} | "
              f"{' / '.join(f'{m:.1f}' for m in meds)} | {ratio} |")
    # What deepum-plan makes today for the half budget, and its prediction.
    budget = int((results / "call3/resnet50.half.budget").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "half.plan.pb"
        summary = subprocess.run(
            [str(tools / "deepum-plan"), PROFILE, "--compute-from", KERNELS, "--device",
             "h100-sxm", "--gpu-memory", str(budget), "-o", str(out)],
            check=True, capture_output=True, text=True)
        lines = (summary.stdout + summary.stderr).splitlines()
        per = next(line for line in lines if line.startswith("per iteration"))
        sim_ms, faults = simulate(tools, out, budget)
    print(f"\ndeepum-plan today, same profile and budget: {per}; simulated {sim_ms:.1f} ms, "
          f"{faults:.0f} demand faults")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
