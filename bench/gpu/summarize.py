"""Tables of a GPU run's results, as docs/results/gpu.md quotes them.

    python3 bench/gpu/summarize.py bench/gpu/results/2026-11-27-h100

The directory holds one folder per call (call1, call2, ...), each the
contents of a call's CALL.tar.gz (bench/gpu/run.sh): NAME.energy.json per
training run (bench/gpu/energy.py), MODEL.WHICH.stats.json (libdeepum's
report), MODEL.replay-inspect-WHICH.txt (deepum-inspect --json of a profile
of a replayed run), steps.txt. Prints Markdown: the training runs (the model
call's first, then any other by name), what the executor did, and the demand
faults of the replayed runs. Steady state is
every step after the first WARMUP (default 5).
"""
import json
import statistics
import sys
from pathlib import Path

WARMUP = 5
RUNS = ("torch", "deepum-noplan", "deepum-fit", "deepum-half")


def step_times(report):
    """Milliseconds of each step line ("step N loss L time T ms")."""
    out = []
    for s in report["steps"]:
        words = s["line"].split()
        if "time" in words:
            out.append(float(words[words.index("time") + 1]))
    return out


def run_row(call, path, baseline):
    r = json.loads(path.read_text())
    times = step_times(r)[WARMUP:]
    if not times:
        return None
    steady = r["steps"][WARMUP:]
    joules = [s["energy_j"] for s in steady]
    seconds = sum(s["seconds"] for s in steady)
    energy = (f"{sum(joules) / len(joules):.1f}" if all(j is not None for j in joules) else
              "not readable")
    median = statistics.median(times)
    model, run = path.name[: -len(".energy.json")].split(".", 1)
    vs = "" if baseline is None else f"{100 * (median / baseline - 1):+.1f}%"
    return (call, model, run, len(times), median, min(times), max(times), vs, energy,
            f"{sum(joules) / seconds:.0f}" if all(j is not None for j in joules) else "")


def header(left, right):
    """A Markdown table's head: LEFT columns aligned left, RIGHT ones right."""
    print("| " + " | ".join(left + right) + " |")
    print("|" + "---|" * len(left) + "---:|" * len(right))


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = Path(argv[0])
    calls = sorted(p for p in root.iterdir() if p.is_dir())
    if not calls:
        print(f"summarize.py: {root}: no call folders", file=sys.stderr)
        return 1
    print(f"Steady state: steps after the first {WARMUP}. Energy: NVML's total-energy counter read "
          "at each step line; its updates are coarser than a 40 ms step, so single steps read 0 or "
          "double and only the mean over the steady steps means anything.\n")
    header(["call", "model", "run"], ["steady steps", "median ms", "min ms", "max ms",
                                      "vs PyTorch (same call)", "J per step", "mean W"])
    for call in calls:
        models = sorted({p.name.split(".")[0] for p in call.glob("*.energy.json")})
        for model in models:
            base = call / f"{model}.torch.energy.json"
            baseline = None
            if base.exists():
                bt = step_times(json.loads(base.read_text()))[WARMUP:]
                baseline = statistics.median(bt) if bt else None
            named = {p.name[len(model) + 1: -len(".energy.json")]
                     for p in call.glob(f"{model}.*.energy.json")}
            # The model call's runs in their order, then the others (plan
            # variants, the demand yardstick) by name.
            for run in [r for r in RUNS if r in named] + sorted(named - set(RUNS)):
                p = call / f"{model}.{run}.energy.json"
                r = run_row(call.name, p, None if run == "torch" else baseline)
                if r:
                    row(*r[:4], *(f"{v:.1f}" for v in r[4:7]), *r[7:])
    print("\nlibdeepum's report (DEEPUM_STATS), per iteration:\n")
    header(["call", "model", "plan"], ["iterations", "launches matched / seen", "resyncs",
                                       "prefetch GB", "evict GB", "discard GB", "budget GB",
                                       "peak resident GB", "backend errors"])
    for call in calls:
        for p in sorted(call.glob("*.stats.json")):
            model, which = p.name[: -len(".stats.json")].split(".", 1)
            report = json.loads(p.read_text())
            for d in report.get("devices", []):
                n = max(d.get("iterations", 0), 1)
                gb = lambda key: f"{d[key]['bytes'] / n / 1e9:.2f}"
                row(call.name, model, which, d.get("iterations", 0),
                    f"{d['launches']['matched']} / {d['launches']['seen']}", d["resyncs"],
                    gb("prefetch"), gb("evict"), gb("discard"), f"{d['budget_bytes'] / 1e9:.2f}",
                    f"{d['peak_resident_bytes'] / 1e9:.2f}", d["backend_errors"])
    print("\nProfiles (deepum-inspect --json), per recorded iteration:\n")
    header(["call", "profile", "mode"], ["iterations", "faults", "HtoD demand GB",
                                         "HtoD driver prefetch GB", "HtoD explicit GB", "DtoH GB",
                                         "footprint GB"])
    for call in calls:
        for p in sorted(call.glob("*inspect*.txt")):
            try:
                s = json.loads(p.read_text())
            except ValueError:
                continue
            n = max(s["iterations"], 1)
            m = s.get("migrations", {})
            gb = lambda d, c: f"{m.get(d, {}).get(c, {}).get('bytes', 0) / n / 1e9:.2f}"
            dtoh = sum(v["bytes"] for v in m.get("dtoh", {}).values()) / n / 1e9
            mode = "access-set" if s["access_source"] == "measured_access_set" else "natural"
            name = p.name.replace(".txt", "")
            row(call.name, name, mode, s["iterations"], f"{s['faults'] / n:.0f}",
                gb("htod", "coherence"), gb("htod", "prefetch"), gb("htod", "user"), f"{dtoh:.2f}",
                f"{s['footprint_bytes'] / 1e9:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
