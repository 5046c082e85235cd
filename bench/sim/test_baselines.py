#!/usr/bin/env python3
"""bench/sim/baselines.py refuses to publish a row where a policy beats a lower bound."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baselines  # noqa: E402


def run(iteration_us, lower=100.0, bound=90.0, cut=100.0):
    return {"iteration_us": iteration_us, "lower_bound_us": lower, "bound_or_ideal_us": bound,
            "cut_bound_us": cut}


def row(**overrides):
    rs = {p: run(120.0) for p in baselines.POLICIES}
    rs.update(overrides)
    return rs


class CheckBoundsTest(unittest.TestCase):
    def test_rows_at_or_above_their_bounds_pass(self):
        data = {("m", "v100", "2"): row(um=run(100.0)), ("m", "v100", "3"): row()}
        self.assertEqual(baselines.check_bounds(data), 2 * len(baselines.POLICIES))

    def test_a_policy_below_its_lower_bound_is_refused(self):
        data = {("resnet50", "h100-pcie", "2"): row(**{"deepum-tuned": run(99.0)})}
        with self.assertRaises(SystemExit) as e:
            baselines.check_bounds(data)
        self.assertIn("resnet50 on h100-pcie at 2x: deepum-tuned ran 99.000 us, below its "
                      "lower_bound_us of 100.000 us; refusing to publish", str(e.exception))

    def test_each_bound_is_checked_not_only_their_maximum(self):
        # A run whose lower_bound_us were wrongly below its cut bound still fails on the cut.
        data = {("m", "d", "2"): row(um=run(95.0, lower=90.0, cut=96.0))}
        with self.assertRaises(SystemExit) as e:
            baselines.check_bounds(data)
        self.assertIn("below its cut_bound_us", str(e.exception))


if __name__ == "__main__":
    unittest.main()
