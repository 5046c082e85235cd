"""PyTorch on CUDA under deepum, end to end on a small ResNet-50 (ctest label `gpu`).

Runs only where torch sees a CUDA device; elsewhere every test skips with the
reason. What it holds deepum to, with the unmodified example script:
  - `deepum-profile -- python examples/resnet50_train.py` records managed
    allocations (deepum's allocator was installed in the profiled process),
    one iteration per optimizer step, and kernels with access sets;
  - `deepum-plan` plans that profile at half its footprint;
  - `python -m deepum.run --plan ... --gpu-memory HALF` trains to parameters
    bit-identical to the run without deepum (`--deterministic`), and
    libdeepum's report (DEEPUM_STATS) says the plan was replayed and matched.

    python3 gpu_pytorch.py TOOLS_DIR [REPO_ROOT]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

TOOLS = Path(sys.argv[1]) if len(sys.argv) > 1 else None
ROOT = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "resnet50_train.py"
SCRIPT = [sys.executable, str(EXAMPLE), "--batch", "8", "--image-size", "64"]


def cuda_missing():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    if TOOLS is None or not (TOOLS / "deepum-profile").exists():
        return "no deepum tools directory given"
    return None


def run(cmd, env=None, timeout=600):
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python")] + ([full["PYTHONPATH"]] if full.get("PYTHONPATH") else []))
    full.update(env or {})
    p = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


@unittest.skipIf(cuda_missing(), cuda_missing() or "")
class PyTorchUnderDeepum(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="deepum-gpu-"))
        cls.profile = cls.work / "resnet50.profile.pb"
        # access-set: with the GPU's room, natural faults stop after the first step.
        run([TOOLS / "deepum-profile", "--mode", "access-set", "--skip", "1", "--iterations", "2",
             "-o", cls.profile, "--",
             *SCRIPT, "--steps", "4"])
        cls.summary = json.loads(run([TOOLS / "deepum-inspect", "--json", cls.profile]).stdout)

    def test_profile_records_managed_allocations_and_optimizer_steps(self):
        s = self.summary
        self.assertGreater(s["allocations"], 0, "no managed allocation: the allocator was not installed")
        self.assertEqual(s["iterations"], 2, "iterations are the optimizer steps after --skip 1")
        self.assertGreater(s["footprint_bytes"], 0, "no kernel touched managed memory")

    def test_plan_at_half_replays_bit_identically(self):
        half = self.summary["peak_live_bytes"] // 2 // 65536 * 65536
        plan = self.work / "resnet50.plan.pb"
        run([TOOLS / "deepum-plan", self.profile, "-o", plan, "--gpu-memory", str(half)])
        plain, under = self.work / "plain.pt", self.work / "deepum.pt"
        stats = self.work / "stats.json"
        run([*SCRIPT, "--steps", "5", "--deterministic", "--save", str(plain)])
        run([sys.executable, "-m", "deepum.run", "--plan", str(plan), "--gpu-memory", str(half), "--",
             *SCRIPT, "--steps", "5", "--deterministic", "--save", str(under)],
            env={"DEEPUM_STATS": str(stats)})
        import torch
        a, b = torch.load(plain), torch.load(under)
        self.assertEqual(a.keys(), b.keys())
        for k in a:
            self.assertTrue(torch.equal(a[k].cpu(), b[k].cpu()), f"{k} differs under deepum")
        report = json.loads(stats.read_text())
        device = report["devices"][0]
        self.assertTrue(device["active"], f"plan not replayed: {device['why_not']}")
        self.assertGreater(device["launches"]["matched"], 0, "no launch matched the plan")
        self.assertEqual(device["backend_errors"], 0)
        self.assertLessEqual(device["peak_resident_bytes"], half)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
