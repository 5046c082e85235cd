"""deepum-run's command line: fail fast when deepum was asked for, step aside otherwise."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
DEEPUM_RUN = PYTHON_DIR.parent / "tools" / "deepum-run"
sys.path.insert(0, str(PYTHON_DIR))

import deepum  # noqa: E402

SCRIPT = "print('the script ran')"

# A PyTorch new enough for deepum (it has CUDAPluggableAllocator), without CUDA.
FAKE_TORCH = textwrap.dedent('''\
    __version__ = "2.9.0"
    class _Memory:
        class CUDAPluggableAllocator: pass
    class cuda:
        memory = _Memory
        @staticmethod
        def is_available(): return False
        @staticmethod
        def is_initialized(): return False
    ''')


class DeepumRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.env = dict(os.environ, DEEPUM_PYTHON=sys.executable)
        for var in ("RANK", "LOCAL_RANK", "DEEPUM_STRICT", "DEEPUM_AUTOLOAD", "DEEPUM_LOG"):
            self.env.pop(var, None)

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, *args, env=None):
        return subprocess.run([str(DEEPUM_RUN), *args], env=env or self.env,
                              capture_output=True, text=True, timeout=120)

    def assert_error(self, r, code, text):
        self.assertEqual(r.returncode, code, r.stderr)
        self.assertNotIn("the script ran", r.stdout)
        lines = r.stderr.splitlines()
        self.assertEqual(len([l for l in lines if "error" in l]), 1, r.stderr)
        self.assertIn(text, r.stderr)

    def fake_torch_env(self):
        (self.dir / "torch").mkdir()
        (self.dir / "torch" / "__init__.py").write_text(FAKE_TORCH)
        return dict(self.env, PYTHONPATH=str(self.dir))

    def test_version(self):
        r = self.run_tool("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^deepum \d+\.\d+\.\d+\n$")

    def test_usage_errors_exit_2(self):
        self.assertEqual(self.run_tool().returncode, 2)
        self.assertEqual(self.run_tool("--no-such-option", "--", "true").returncode, 2)

    def test_unknown_log_level_is_a_usage_error(self):
        r = self.run_tool("--log", "loud", "--", sys.executable, "-c", SCRIPT)
        self.assert_error(r, 2, "unknown level 'loud'")
        r = self.run_tool("--", sys.executable, "-c", SCRIPT, env=dict(self.env, DEEPUM_LOG="x"))
        self.assert_error(r, 2, "DEEPUM_LOG 'x': unknown level")
        r = self.run_tool("--log", "info:/dev/null", "--", sys.executable, "-c", SCRIPT)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_missing_plan(self):
        r = self.run_tool("--plan", str(self.dir / "missing.pb"), "--", sys.executable, "-c",
                          SCRIPT)
        self.assert_error(r, 1, f"deepum: error: plan {self.dir}/missing.pb: No such file")

    def test_unreadable_plan(self):
        r = self.run_tool("--plan", str(self.dir), "--", sys.executable, "-c", SCRIPT)
        self.assert_error(r, 1, f"deepum: error: plan {self.dir}: Is a directory")

    def test_bad_gpu_memory(self):
        r = self.run_tool("--gpu-memory", "12 apples", "--", sys.executable, "-c", SCRIPT)
        self.assert_error(r, 1, "deepum: error: --gpu-memory '12 apples'")

    def test_unsupported_torch_under_strict(self):
        import torch

        if hasattr(torch.cuda, "memory") and hasattr(torch.cuda.memory, "CUDAPluggableAllocator"):
            self.skipTest("this PyTorch supports deepum")
        r = self.run_tool("--strict", "--", sys.executable, "-c", SCRIPT)
        self.assert_error(r, 1, "deepum: error: deepum needs torch.cuda.memory."
                                "CUDAPluggableAllocator")

    def test_no_cuda_under_strict(self):
        env = self.fake_torch_env()
        r = self.run_tool("--strict", "--", sys.executable, "-c", SCRIPT, env=env)
        self.assert_error(r, 1, "deepum: error: CUDA is not available")
        r = self.run_tool("--", sys.executable, "-c", SCRIPT, env=dict(env, DEEPUM_STRICT="1"))
        self.assert_error(r, 1, "deepum: error: CUDA is not available")

    def test_without_strict_the_script_trains_without_deepum(self):
        r = self.run_tool("--", sys.executable, "-c", SCRIPT, env=self.fake_torch_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("the script ran", r.stdout)
        self.assertIn("deepum: CUDA is not available; training runs without deepum", r.stderr)
        self.assertNotIn("error", r.stderr)


class Checks(unittest.TestCase):
    def test_sizes(self):
        for good in ("16GiB", "8 GiB", "1.5G", "4096", "100MB", "0=8GiB,1=4GiB"):
            deepum.check_size(good)
        for bad in ("", "12 apples", "-1GiB", "GiB", "0=", "a=8GiB", "8GiB,4GiB"):
            with self.assertRaises(deepum.DeepumError, msg=bad):
                deepum.check_size(bad)

    def test_log_levels(self):
        for good in ("", "off", "error", "warn", "info", "debug", "2", "debug:/tmp/deepum.log"):
            deepum.check_log(good)
        for bad in ("loud", "INFO", "verbose:/tmp/x"):
            with self.assertRaises(deepum.DeepumError, msg=bad):
                deepum.check_log(bad)

    def test_rank_fields(self):
        env = {"RANK": "3", "LOCAL_RANK": "1"}
        self.assertEqual(deepum.resolve_path("s.{rank}.{local_rank}.json", env), "s.3.1.json")
        self.assertEqual(deepum.resolve_path("s.{rank}.json", {}), "s.0.json")
        with self.assertRaises(ValueError):
            deepum.resolve_path("s.{node}.json", env)



class PythonOrNot(unittest.TestCase):
    """Which commands deepum-run enables in the interpreter and which get the
    interposer preloaded: deepum-profile's rule (profiler/lib/Launch.cpp)."""

    def test_names(self):
        from deepum.run import is_python_command
        for cmd in (["python"], ["python3", "-m", "x"], ["/usr/bin/python3.11", "t.py"],
                    ["env", "A=1", "-i", "python3", "t.py"]):
            self.assertTrue(is_python_command(cmd, os.environ), cmd)
        for cmd in (["python3-config"], ["./train"], ["env", "A=1", "./train"], ["pythonx"]):
            self.assertFalse(is_python_command(cmd, os.environ), cmd)

    def test_scripts_by_their_first_line(self):
        from deepum.run import is_python_command
        with tempfile.TemporaryDirectory() as tmp:
            py = Path(tmp) / "torchrun"
            py.write_text("#!/usr/bin/env python3\nprint(1)\n")
            sh = Path(tmp) / "train.sh"
            sh.write_text("#!/bin/sh\n./train\n")
            binary = Path(tmp) / "train"
            binary.write_bytes(b"\x7fELF\x02\x01\x01")
            self.assertTrue(is_python_command([str(py)], os.environ))
            self.assertFalse(is_python_command([str(sh)], os.environ))
            self.assertFalse(is_python_command([str(binary)], os.environ))
            self.assertFalse(is_python_command(["no-such-program"], os.environ))

    def test_native_environment(self):
        from deepum.run import build_native_env, parse
        args = parse(["--plan", "p.rank{rank}.pb", "--gpu-memory", "2GiB", "--stats", "s.json",
                      "--", "./train"])
        env = build_native_env(args, {"LD_PRELOAD": "other.so", "RANK": "3",
                                      "DEEPUM_INTERPOSE_LIBRARY": "/x/libdeepum_interpose.so",
                                      "DEEPUM_LIBRARY": "/x/libdeepum.so",
                                      "DEEPUM_PLAN_TEMPLATE": "stale"})
        self.assertEqual(env["LD_PRELOAD"], "/x/libdeepum_interpose.so:other.so")
        self.assertEqual(env["DEEPUM_PLAN"], "p.rank3.pb")
        self.assertEqual(env["DEEPUM_GPU_MEMORY"], "2GiB")
        self.assertEqual(env["DEEPUM_STATS"], "s.json")
        self.assertEqual(env["DEEPUM_STRICT"], "1")
        self.assertNotIn("DEEPUM_PLAN_TEMPLATE", env)

if __name__ == "__main__":
    unittest.main()
