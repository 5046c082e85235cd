#!/usr/bin/env python3
"""bench/gpu/lease_summary.py on a lease folder made here: the figures summary.json
must hold, and the page's table made from it.

    python3 bench/gpu/test_lease_summary.py -v
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lease_summary  # noqa: E402

GB = 10**9


def energy(path, times, before=None, peak=None, rc=0):
    steps = [{"line": f"step {i} loss 1.0 time {t} ms"} for i, t in enumerate(times)]
    path.write_text(json.dumps({"exit_status": rc, "used_before_bytes": before,
                                "peak_used_bytes": peak, "steps": steps}))


def make_lease(work):
    """A context run, PyTorch with room, a plan within its budget, demand paging over it."""
    energy(work / "context.energy.json", [5, 5], before=1 * GB, peak=2 * GB)
    warm = [900.0] * lease_summary.WARMUP
    energy(work / "resnet50.torch.1.energy.json", warm + [40.0, 41.0, 39.0, 40.0, 60.0],
           before=1 * GB, peak=10 * GB)
    energy(work / "resnet50.r2.0.energy.json", warm + [300.0, 310.0, 320.0, 330.0],
           before=1 * GB, peak=5 * GB)
    energy(work / "resnet50.demand2.0.energy.json", warm + [500.0], before=1 * GB, peak=7 * GB)
    (work / "resnet50.r2.0.sim.json").write_text(json.dumps({"iteration_us": 250000.0}))
    (work / "resnet50.replay-inspect-r2.0.txt").write_text(
        json.dumps({"faults": 300, "iterations": 3}))
    runs = [("resnet50.torch.1", "room", "torch", 0, ""),
            ("resnet50.r2.0", "2.00", "plan", 3 * GB, str(work / "resnet50.r2.0.plan.pb")),
            ("resnet50.demand2.0", "2.00", "demand", 3 * GB,
             str(work / "resnet50.demand2.0.plan.pb")),
            ("resnet50.offload", "2.00", "offload", 3 * GB, "")]
    (work / "runs.jsonl").write_text("".join(
        json.dumps({"name": n, "model": "resnet50", "ratio": r, "path": p, "budget_bytes": b,
                    "plan": f}) + "\n" for n, r, p, b, f in runs))
    (work / "steps.txt").write_text("model gpt2                       skipped: needs 330 s, 180 s left\n")


class LeaseSummary(unittest.TestCase):
    def test_summary_and_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            make_lease(work)
            out = work / "summary.json"
            subprocess.run([sys.executable, str(HERE / "lease_summary.py"), str(work), "-o",
                            str(out)], check=True, timeout=60)
            s = json.loads(out.read_text())
            page = subprocess.run([sys.executable, str(HERE / "lease_summary.py"), "--page",
                                   str(out)], check=True, capture_output=True, text=True,
                                  timeout=60).stdout
        self.assertEqual(s["context_bytes"], 1 * GB)
        runs = {r["name"]: r for r in s["runs"]}
        torch, plan, demand, offload = (runs[n] for n in ("resnet50.torch.1", "resnet50.r2.0",
                                                          "resnet50.demand2.0",
                                                          "resnet50.offload"))
        self.assertEqual((torch["steady_steps"], torch["median_ms"], torch["iqr_ms"]),
                         (5, 40.0, [40.0, 41.0]))
        self.assertEqual(torch["peak_residency_bytes"], 8 * GB)
        self.assertIsNone(torch["residency_over_budget"])
        self.assertEqual((plan["median_ms"], plan["iqr_ms"]), (315.0, [307.5, 322.5]))
        self.assertEqual(plan["peak_residency_bytes"], 3 * GB)
        self.assertFalse(plan["residency_over_budget"])
        self.assertEqual(plan["fault_records_per_iteration"], 100.0)
        self.assertEqual((plan["simulated_ms"], plan["simulated_over_measured"]), (250.0, 0.79))
        self.assertTrue(demand["residency_over_budget"])
        self.assertIsNone(demand["simulated_ms"])
        self.assertEqual(offload["steady_steps"], 0)
        self.assertIsNone(offload["median_ms"])
        self.assertEqual(len(s["skipped"]), 1)
        self.assertIn("| resnet50.demand2.0 | resnet50 | 2.00 | demand | 1 | 500.0 | "
                      "500.0–500.0 | 5.00 | **yes** |", page)
        self.assertIn("| resnet50.r2.0 | resnet50 | 2.00 | plan | 4 | 315.0 | 307.5–322.5 | "
                      "3.00 | no | 100 | 250.0 | 0.79 |", page)
        self.assertIn("Skipped: model gpt2", page)

    def test_a_folder_without_runs_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sys.executable, str(HERE / "lease_summary.py"), tmp],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("runs.jsonl: no such file", r.stderr)
        self.assertEqual(r.stderr.strip().count("\n"), 0)


if __name__ == "__main__":
    unittest.main()
