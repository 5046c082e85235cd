#!/usr/bin/env python3
"""deepum-sim against the GPU: each plan that ran on the H100, simulated on
the profile it was made from, beside its measured step time.

    sim_vs_gpu.py TOOLS_DIR [RESULTS_DIR]

TOOLS_DIR holds deepum-sim and deepum-plan; RESULTS_DIR defaults to
bench/gpu/results/2026-11-27-h100. The profiles (tests/data, access-set,
without migration records): ResNet-50 at batch 64 recorded in call3, with the
compute times of call5's --mode kernels profile; GPT-2 medium at batch 4 and
1,024 tokens recorded in call9, with call10's. The device is the built-in
h100-sxm. Measured: the median of the steady steps (bench/gpu/summarize.py)
of every run of that plan. Prints Markdown (docs/results/gpu.md quotes it),
then the plan deepum-plan makes for each model's half budget today and its
simulated time.
"""
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize import WARMUP, step_times  # noqa: E402

# ResNet-50's kernels as PyTorch's profiler timed them in call9 (kernel_times.py),
# laid over the kernels profile by torch_durations.py: the compute times
# without deepum's profiler.
RESNET_TORCH_TIMES = "call9/resnet50.kernel-times.json"

# (access-set profile, its --mode kernels compute times)
RESNET = ("tests/data/h100-resnet50-b64.profile.pb.gz", "tests/data/h100-resnet50-b64.kernels.pb.gz")
GPT2 = ("tests/data/h100-gpt2-medium-b4.profile.pb.gz",
        "tests/data/h100-gpt2-medium-b4.kernels.pb.gz")
PROFILE, KERNELS = RESNET

# (row, plan relative to the results, budget file, runs that replayed it[, profile])
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
    ("fit plan (c), third lease", "call9/resnet50.fit.plan.pb", "call9/resnet50.fit.budget",
     ["call9/resnet50.deepum-fit"]),
    ("prefetch plan as made today (e), third lease", "call9/resnet50.half.plan.pb",
     "call9/resnet50.half.budget", ["call9/resnet50.deepum-half"]),
    ("GPT-2 medium: fit plan (c)", "call10/gpt2.fit.plan.pb", "call10/gpt2.fit.budget",
     ["call10/gpt2.deepum-fit"], GPT2),
    ("GPT-2 medium: demand, no prefetch (d)", "call10/gpt2.demand.plan.pb",
     "call10/gpt2.demand.budget", ["call10/gpt2.deepum-demand"], GPT2),
    ("GPT-2 medium: prefetch plan (e)", "call10/gpt2.half.plan.pb", "call10/gpt2.half.budget",
     ["call10/gpt2.deepum-half"], GPT2),
]


def measured(results, run):
    """Median of the steady steps; a run too short to have any (GPT-2's demand
    paging ran 3 steps) gives the median of its steps after the first, marked *."""
    r = json.loads((results / f"{run}.energy.json").read_text())
    times = step_times(r)
    if len(times) > WARMUP:
        return statistics.median(times[WARMUP:]), ""
    if len(times) > 1:
        return statistics.median(times[1:]), "*"
    return None


def simulate(tools, plan, budget, profile=RESNET):
    out = subprocess.run(
        [str(tools / "deepum-sim"), profile[0], "--compute-from", profile[1], "--device",
         "h100-sxm",
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
    with tempfile.TemporaryDirectory() as tmp:
        return report(tools, results, Path(tmp))


def report(tools, results, tmp):
    """Prints the table and the plans of today; TMP holds the files made on the way."""
    torch_times = str(tmp / "resnet50.torch-durations.pb.gz")
    subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "torch_durations.py"),
                    RESNET[1], str(results / RESNET_TORCH_TIMES), torch_times], check=True,
                   capture_output=True, text=True)
    print("| plan (ResNet-50 at batch 64 unless named) | budget GB | simulated ms | measured ms "
          "(median of steady steps, per run) | simulated / measured | simulated with "
          "PyTorch's durations | / measured |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, plan, budget_file, runs, *profile in ROWS:
        budget = int((results / budget_file).read_text())
        sim_ms, _ = simulate(tools, results / plan, budget, *profile)
        meds = [m for m in (measured(results, r) for r in runs) if m is not None]
        ratio = " / ".join(f"{sim_ms / m:.2f}" for m, _ in meds)
        torch_cols = "— | —"
        if not profile:
            t_ms, _ = simulate(tools, results / plan, budget, (RESNET[0], torch_times))
            torch_cols = f"{t_ms:.1f} | " + " / ".join(f"{t_ms / m:.2f}" for m, _ in meds)
        print(f"| {label} | {budget / 1e9:.2f} | {sim_ms:.1f} | "
              f"{' / '.join(f'{m:.1f}{mark}' for m, mark in meds)} | {ratio} | {torch_cols} |")
    # What deepum-plan makes today for each model's half budget, and its prediction.
    for name, profile, budget_file in (("ResNet-50", RESNET, "call3/resnet50.half.budget"),
                                       ("GPT-2 medium", GPT2, "call10/gpt2.half.budget")):
        budget = int((results / budget_file).read_text())
        out = tmp / "half.plan.pb"
        summary = subprocess.run(
            [str(tools / "deepum-plan"), profile[0], "--compute-from", profile[1],
             "--device", "h100-sxm", "--gpu-memory", str(budget), "-o", str(out)],
            check=True, capture_output=True, text=True)
        lines = (summary.stdout + summary.stderr).splitlines()
        per = next(line for line in lines if line.startswith("per iteration"))
        sim_ms, faults = simulate(tools, out, budget, profile)
        print(f"\ndeepum-plan today, {name}, same profile and budget: {per}; simulated "
              f"{sim_ms:.1f} ms, {faults:.0f} demand faults")
    print("\n* fewer steps than the warm-up: the median of the steps after the first.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
