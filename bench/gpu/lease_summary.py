#!/usr/bin/env python3
"""A lease's machine-readable summary, and the results page's table from it:

    lease_summary.py WORK [-o summary.json]   per run of WORK/runs.jsonl (bench/gpu/run.sh)
    lease_summary.py --page summary.json      the Markdown table docs/results/gpu.md takes

Per run: the model, the oversubscription ratio by the planner's count ("room" without
a budget), the path (torch, noplan, plan, previous, demand, plan-waits, or an
alternative: checkpoint, save_on_cpu, offload), the budget; the median and
interquartile range of the steady steps' milliseconds (the steps after the first
5); the peak residency, the GPU's memory in use above what it was before the run and
above the CUDA context (context.energy.json: a process that holds nothing of the
model), and whether that exceeded the budget; fault records an iteration (the
replay profile named after the run, when one was taken); the plan simulated with the
call's own calibration (NAME.WHICH.sim.json) and simulated / measured. A run with no
steady steps, a failed run or a figure not measured is null, never left out.
"""
import argparse
import json
import sys
from pathlib import Path

WARMUP = 5


def step_times(report):
    """Milliseconds of each step line ("step N loss L time T ms")."""
    out = []
    for s in report.get("steps", []):
        words = s.get("line", "").split()
        if "time" in words:
            out.append(float(words[words.index("time") + 1]))
    return out


def quartiles(xs):
    """(25th, 50th, 75th percentile) by linear interpolation, as numpy's default."""
    s = sorted(xs)

    def q(p):
        k = (len(s) - 1) * p
        lo = int(k)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


def load_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def context_bytes(work):
    ctx = load_json(work / "context.energy.json")
    if not ctx or ctx.get("peak_used_bytes") is None or ctx.get("used_before_bytes") is None:
        return None
    return ctx["peak_used_bytes"] - ctx["used_before_bytes"]


def faults_per_iteration(work, name):
    """From NAME's replay profile: MODEL.replay-inspect-LABEL.txt for run MODEL.LABEL."""
    model, _, label = name.partition(".")
    s = load_json(work / f"{model}.replay-inspect-{label}.txt")
    if not s or "faults" not in s:
        return None
    return round(s["faults"] / max(s.get("iterations", 1), 1), 1)


def simulated_ms(work, run):
    plan = run.get("plan") or ""
    if not plan.endswith(".plan.pb"):
        return None
    # run.sh's lease_simulate writes MODEL.WHICH.sim.json beside MODEL.WHICH.plan.pb.
    sim = load_json(work / (Path(plan).name[: -len(".plan.pb")] + ".sim.json"))
    return round(sim["iteration_us"] / 1e3, 1) if sim and "iteration_us" in sim else None


def summarize(work):
    runs_file = work / "runs.jsonl"
    if not runs_file.is_file():
        raise SystemExit(f"lease_summary.py: {runs_file}: no such file (no run was recorded)")
    runs = []
    for n, line in enumerate(runs_file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            runs.append(json.loads(line))
        except ValueError as e:
            raise SystemExit(f"lease_summary.py: {runs_file}:{n}: not JSON ({e})")
    ctx = context_bytes(work)
    rows = []
    for run in runs:
        name = run["name"]
        energy = load_json(work / f"{name}.energy.json") or {}
        times = step_times(energy)[WARMUP:]
        q = quartiles(times) if times else None
        budget = run.get("budget_bytes") or None
        residency = over = None
        if energy.get("peak_used_bytes") is not None and energy.get("used_before_bytes") is not None:
            residency = energy["peak_used_bytes"] - energy["used_before_bytes"] - (ctx or 0)
            if budget:
                over = residency > budget
        sim = simulated_ms(work, run)
        rows.append({
            "name": name, "model": run["model"], "ratio": run["ratio"], "path": run["path"],
            "budget_bytes": budget, "exit_status": energy.get("exit_status"),
            "steady_steps": len(times),
            "median_ms": round(q[1], 2) if q else None,
            "iqr_ms": [round(q[0], 2), round(q[2], 2)] if q else None,
            "peak_residency_bytes": residency, "residency_over_budget": over,
            "fault_records_per_iteration": faults_per_iteration(work, name),
            "simulated_ms": sim,
            "simulated_over_measured": round(sim / q[1], 2) if sim and q else None,
        })
    skipped = []
    steps = work / "steps.txt"
    if steps.is_file():
        skipped = [" ".join(line.split()) for line in steps.read_text().splitlines()
                   if " skipped:" in line]
    return {"schema": 1, "warmup_steps": WARMUP, "context_bytes": ctx,
            "calibrated": (work / "calibrate.device.json").is_file(),
            "skipped": skipped, "runs": rows}


def cell(v, fmt="{}"):
    return "—" if v is None else fmt.format(v)


def page(summary):
    out = ["| run | model | ratio | path | steady steps | median ms | IQR ms | "
           "peak residency GB | over budget | fault records / iteration | simulated ms | "
           "simulated / measured |",
           "|---|---|---|---|---:|---:|---|---:|---|---:|---:|---:|"]
    for r in summary["runs"]:
        iqr = "—" if r["iqr_ms"] is None else f"{r['iqr_ms'][0]:.1f}–{r['iqr_ms'][1]:.1f}"
        res = r["peak_residency_bytes"]
        over = {None: "—", True: "**yes**", False: "no"}[r["residency_over_budget"]]
        out.append(f"| {r['name']} | {r['model']} | {r['ratio']} | {r['path']} | "
                   f"{r['steady_steps']} | {cell(r['median_ms'], '{:.1f}')} | {iqr} | "
                   f"{cell(res / 1e9 if res is not None else None, '{:.2f}')} | {over} | "
                   f"{cell(r['fault_records_per_iteration'], '{:.0f}')} | "
                   f"{cell(r['simulated_ms'], '{:.1f}')} | "
                   f"{cell(r['simulated_over_measured'], '{:.2f}')} |")
    if summary["skipped"]:
        out.append("")
        out.append("Skipped: " + "; ".join(summary["skipped"]))
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("work", nargs="?", help="a lease's work folder")
    p.add_argument("-o", "--out", help="write summary.json here (default: stdout)")
    p.add_argument("--page", metavar="SUMMARY", help="print the Markdown table of SUMMARY")
    a = p.parse_args(argv)
    if a.page:
        s = load_json(Path(a.page))
        if not s or "runs" not in s:
            print(f"lease_summary.py: {a.page}: not a summary.json", file=sys.stderr)
            return 1
        print(page(s))
        return 0
    if not a.work or not Path(a.work).is_dir():
        print(f"lease_summary.py: {a.work}: not a folder", file=sys.stderr)
        return 1
    text = json.dumps(summarize(Path(a.work)), indent=1) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
