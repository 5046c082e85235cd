"""The PyTorch integration's CPU-checkable behaviour (GPU behaviour: bench/gpu)."""
import os
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PYTHON_DIR))

import deepum  # noqa: E402
from deepum import run  # noqa: E402


class PlanTemplate(unittest.TestCase):
    def test_rank_substitution(self):
        env = {"RANK": "3", "LOCAL_RANK": "1"}
        self.assertEqual(deepum.resolve_plan_path("p.rank{rank}.pb", env), "p.rank3.pb")
        self.assertEqual(deepum.resolve_plan_path("p{local_rank}.pb", env), "p1.pb")
        self.assertEqual(deepum.resolve_plan_path("plain.pb", {}), "plain.pb")

    def test_unknown_field_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, "unknown field"):
            deepum.resolve_plan_path("p{node}.pb", {})


class EnableWithoutCuda(unittest.TestCase):
    def test_degrades_to_nothing(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is present; this checks the CPU-only path")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(deepum.enable(plan="x.pb"))
        self.assertTrue(any("CUDA is not available" in str(x.message) for x in w))
        self.assertFalse(deepum.enabled())
        deepum.step()  # a no-op, not an error


class DeepumRun(unittest.TestCase):
    def run_child(self, *args):
        cmd = [sys.executable, "-m", "deepum.run", *args]
        return subprocess.run(cmd, cwd=PYTHON_DIR, capture_output=True, text=True, timeout=120)

    def test_child_sees_configuration_and_autoload(self):
        # Without --plan or --strict deepum steps aside here (no CUDA) and the script runs.
        probe = ("import os, sys; import deepum; "
                 "print(os.environ['DEEPUM_STATS'], os.environ['DEEPUM_GPU_MEMORY'], "
                 "os.environ['DEEPUM_AUTOLOAD'], os.environ.get('DEEPUM_STRICT', '-'), "
                 "'deepum' in sys.modules)")
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, "s.rank{rank}.json")
            r = self.run_child("--stats", stats, "--gpu-memory", "8GiB", "--",
                               sys.executable, "-c", probe)
            self.assertEqual(r.returncode, 0, r.stderr)
            # sitecustomize ran (it flips DEEPUM_AUTOLOAD to 0), imported deepum and
            # resolved the stats path for rank 0.
            self.assertEqual(r.stdout.split(),
                             [os.path.join(tmp, "s.rank0.json"), "8GiB", "0", "-", "True"])

    def test_plan_asks_for_deepum(self):
        from deepum import run

        env = run.build_env(run.parse(["--plan", "p.rank{rank}.pb", "--", "python3"]), {})
        self.assertEqual(env["DEEPUM_PLAN_TEMPLATE"], "p.rank{rank}.pb")
        self.assertEqual(env["DEEPUM_STRICT"], "1")
        env = run.build_env(run.parse(["--", "python3"]), {})
        self.assertNotIn("DEEPUM_STRICT", env)

    def test_missing_command(self):
        r = self.run_child("--plan", "x.pb")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no command given", r.stderr)

    def test_command_not_found(self):
        r = self.run_child("--", "/nonexistent/trainer")
        self.assertEqual(r.returncode, 127)
        self.assertIn("command not found", r.stderr)


if __name__ == "__main__":
    unittest.main()
