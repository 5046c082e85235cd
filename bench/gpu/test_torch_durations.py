#!/usr/bin/env python3
"""bench/gpu/torch_durations.py on the shipped H100 profiles, with launches made from them.

    DEEPUM_TOOLS=BUILD/tools test_torch_durations.py -v

The launches PyTorch's profiler would list are made from the --mode kernels profile's own
last iteration: its names demangled, each duration halved, with launches deepum's iteration
does not have inserted and one of its kernels left out. The tool must match every other
kernel, set exactly those durations, keep the left-out one's, and write a profile that
deepum-sim takes with --compute-from (its ideal time then follows the new durations). A
stream of another program's launches must be refused.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import torch_durations  # noqa: E402

KERNELS = ROOT / "tests/data/h100-resnet50-b64.kernels.pb.gz"
ACCESS_SET = ROOT / "tests/data/h100-resnet50-b64.profile.pb.gz"


def iteration(p):
    it = p.iterations[-1]
    return [p.kernels[it.first_kernel + j] for j in range(it.kernel_count)]


class TorchDurations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pb2 = torch_durations.load_profile_module()
        cls.profile = torch_durations.read_profile(cls.pb2, KERNELS)
        cls.kernels = iteration(cls.profile)
        cls.names = torch_durations.demangle([k.name for k in cls.kernels])
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_tool(self, launches, out):
        times = Path(self.tmp.name) / "times.json"
        times.write_text(json.dumps({"windows": [{"launches": launches}]}))
        return subprocess.run([sys.executable, str(HERE / "torch_durations.py"), str(KERNELS),
                               str(times), str(out)], capture_output=True, text=True)

    def test_matches_sets_and_keeps(self):
        # A kernel unlike both neighbours: beside a twin, which of the two is missing cannot
        # be told from the names.
        left_out = next(j for j in range(len(self.names) // 2, len(self.names) - 1)
                        if self.names[j - 1] != self.names[j] != self.names[j + 1])
        launches = [["void at::native::unrelated_kernel<float>(float*)", 999.0]]
        for j, (k, name) in enumerate(zip(self.kernels, self.names)):
            if j == left_out:
                continue
            launches.append([name, (k.end_ns - k.start_ns) / 2e3])
            if j % 100 == 0:
                launches.append(["Memset (Device)", 1.0])
        out = Path(self.tmp.name) / "out.pb.gz"
        r = self.run_tool(launches, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{len(self.kernels) - 1} of {len(self.kernels)} kernels matched",
                      r.stdout)
        got = iteration(torch_durations.read_profile(self.pb2, out))
        self.assertEqual(len(got), len(self.kernels))
        for j, (a, b) in enumerate(zip(self.kernels, got)):
            self.assertEqual(a.name, b.name)
            self.assertEqual(a.start_ns, b.start_ns)
            want = a.end_ns - a.start_ns
            if j != left_out:
                want = round(want / 2e3 * 1e3)
            self.assertEqual(b.end_ns - b.start_ns, want, f"kernel {j} {a.name}")

        tools = os.environ.get("DEEPUM_TOOLS")
        if not tools:
            self.skipTest("DEEPUM_TOOLS not set: --compute-from not tried")

        def ideal_us(*extra):
            o = subprocess.run([str(Path(tools) / "deepum-sim"), str(ACCESS_SET), "--policy",
                                "ideal", "--json", "--quiet", "--device", "h100-sxm",
                                "--iterations", "1", "--warmup", "0", *extra],
                               capture_output=True, text=True, check=True).stdout
            return json.loads(o)["ideal_us"]

        before, after = ideal_us("--compute-from", str(KERNELS)), ideal_us("--compute-from",
                                                                          str(out))
        kept = (self.kernels[left_out].end_ns - self.kernels[left_out].start_ns) / 1e3
        self.assertAlmostEqual(after, (before - kept) / 2 + kept, delta=0.01 * before)

    def test_refuses_another_program(self):
        launches = [[f"void other::kernel_{i}(int)", 5.0] for i in range(len(self.kernels))]
        r = self.run_tool(launches, Path(self.tmp.name) / "never.pb.gz")
        self.assertEqual(r.returncode, 1)
        self.assertIn("kernels match", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)
        self.assertFalse((Path(self.tmp.name) / "never.pb.gz").exists())

    def test_refuses_a_file_without_launches(self):
        times = Path(self.tmp.name) / "old.json"
        times.write_text(json.dumps({"windows": [{"kernels": 3, "top": []}]}))
        r = subprocess.run([sys.executable, str(HERE / "torch_durations.py"), str(KERNELS),
                            str(times), str(Path(self.tmp.name) / "x.pb")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no launches recorded", r.stderr)

    def test_refuses_a_file_that_is_no_profile(self):
        junk = Path(self.tmp.name) / "junk.pb.gz"
        junk.write_bytes(gzip.compress(b"\xff" * 64))
        times = Path(self.tmp.name) / "t.json"
        times.write_text(json.dumps({"windows": [{"launches": [["k", 1.0]]}]}))
        r = subprocess.run([sys.executable, str(HERE / "torch_durations.py"), str(junk),
                            str(times), str(Path(self.tmp.name) / "y.pb")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
