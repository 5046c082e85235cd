#!/usr/bin/env python3
"""bench/plan/summary.py: its figures are the targets table's, and docs/results/plan.md holds
what it prints for docs/results/plan.csv (the prose comes from the same run as the tables)."""
import io
import os
import re
import sys
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import summary  # noqa: E402

RESULTS = os.path.join(HERE, "..", "..", "docs", "results")


def targets(device, start):
    """The 'achieved' cell of the targets row starting with `start` for `device`."""
    with open(os.path.join(RESULTS, "plan.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.split("|")]
            if len(cells) > 3 and cells[1].startswith(start) and cells[2] == device:
                return cells[3]
    raise AssertionError(f"no targets row '{start}' for {device}")


class Summary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rows = summary.load(os.path.join(RESULTS, "plan.csv"))

    def test_figures_are_the_targets_tables(self):
        for device in summary.DEVICES:
            j = summary.judge(self.rows, device)
            self.assertEqual(f"{j['gm']:.3f}", targets(device, "geomean plan / tightest lower bound"))
            tuned = targets(device, "geomean speedup over the tuned deepum at 2x")
            self.assertTrue(tuned.startswith(f"{j['vs_tuned']:.3f} over {j['judged']} rows"), tuned)
            self.assertEqual(targets(device, "never slower than any baseline"),
                             f"slower in {j['slower']} of {j['rows']} rows")
            fastest = targets(device, "(for reference) geomean speedup over the fastest baseline")
            self.assertTrue(fastest.startswith(f"{j['lead']:.3f} "), fastest)
            self.assertIn(f"least {j['least'][0]:.3f} ({j['least'][1]} over {j['least'][2]})",
                          fastest)

    def test_h100_sxm_figures_are_the_targets_tables(self):
        j = summary.judge(self.rows, summary.SXM)
        self.assertEqual(f"{j['gm']:.3f}",
                         targets(summary.SXM, "geomean plan / tightest lower bound"))
        cell = targets(summary.SXM, "never slower than any baseline")
        named = sorted((m, float(r), b) for m, r, b in
                       re.findall(r"(\S+) (\d+\.\d+)x \(([^)]+)\)", cell))
        self.assertEqual(named, sorted((m, r, b) for _, m, r, b in j["losses"]))
        self.assertEqual(j["slower"], len(named))

    def test_plan_md_holds_what_it_prints(self):
        out = io.StringIO()
        with redirect_stdout(out):
            summary.main(os.path.join(RESULTS, "plan.csv"))
        with open(os.path.join(RESULTS, "plan.md")) as f:
            page = f.read()
        for paragraph in out.getvalue().strip().split("\n\n"):
            self.assertTrue(paragraph in page, "plan.md lacks: " + paragraph[:160])

    def test_a_plan_slower_than_a_baseline_is_counted(self):
        rows = {k: {p: dict(r) for p, r in v.items()} for k, v in self.rows.items()}
        key = next(k for k in rows if k[0] == "h100-pcie" and k[2] == 2.0)
        fastest = min((b for b in summary.BASELINES if summary.competes(rows[key], b)),
                      key=lambda b: float(rows[key][b]["iteration_us"]))
        rows[key]["plan"]["iteration_us"] = str(2 * float(rows[key][fastest]["iteration_us"]))
        j = summary.judge(rows, "h100-pcie")
        self.assertEqual(j["slower"], 1)
        self.assertEqual(j["least"][1:], (key[1], fastest))
        self.assertAlmostEqual(j["least"][0], 0.5)

    def test_offload_counts_only_where_its_own_peak_fits(self):
        rows = {k: {p: dict(r) for p, r in v.items()} for k, v in self.rows.items()}
        key = next(k for k in rows if k[0] == "h100-pcie" and k[2] == 2.0)
        offload = dict(rows[key]["plan"], policy="offload")
        offload["iteration_us"] = str(float(rows[key]["plan"]["iteration_us"]) / 2)
        capacity = int(offload["capacity_bytes"])
        rows[key]["offload"] = offload
        for peak, slower in ((capacity, 1), (capacity + 1, 0)):
            offload["policy_peak_bytes"] = str(peak)
            before = summary.judge({k: v for k, v in rows.items() if k != key}, "h100-pcie")
            self.assertEqual(summary.judge(rows, "h100-pcie")["slower"], before["slower"] + slower)


if __name__ == "__main__":
    unittest.main()
