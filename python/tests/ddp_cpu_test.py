"""deepum-run with data-parallel training: every torchrun worker gets deepum, each with
its own rank's files, and the launcher none. Two workers on the CPU (gloo).

Debian's torch 1.13 torchrun fails on Python 3.11 before it starts a worker, so a
stand-in named `torchrun` starts the workers as torchrun does: one process per rank,
with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEEPUM_RUN = ROOT / "tools" / "deepum-run"
EXAMPLE = ROOT / "examples" / "ddp_train.py"
TINY = ["--device", "cpu", "--width", "32", "--layers", "2", "--batch", "4", "--steps", "2"]

LAUNCHER = textwrap.dedent('''\
    #!{python}
    # torchrun [--nproc_per_node=N] [--no-python] COMMAND ARGS...: one worker per rank.
    import os, subprocess, sys
    args = sys.argv[1:]
    nproc, python = 1, True
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a.startswith("--nproc_per_node="):
            nproc = int(a.split("=", 1)[1])
        elif a == "--no-python":
            python = False
    print("launcher has deepum:", "deepum" in sys.modules, flush=True)
    command = ([sys.executable] if python else []) + args
    workers = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=os.environ["TEST_MASTER_PORT"])
        workers.append(subprocess.Popen(command, env=env))
    sys.exit(max(w.wait() for w in workers))
    ''')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DdpUnderDeepumRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        launcher = bin_dir / "torchrun"
        launcher.write_text(LAUNCHER.format(python=sys.executable))
        launcher.chmod(0o755)
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                        DEEPUM_PYTHON=sys.executable, TEST_MASTER_PORT=str(free_port()),
                        OMP_NUM_THREADS="1")
        for var in ("RANK", "LOCAL_RANK", "DEEPUM_STRICT", "DEEPUM_AUTOLOAD", "DEEPUM_LOG"):
            self.env.pop(var, None)

    def tearDown(self):
        self.tmp.cleanup()

    def run_command(self, command):
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)

    def check_workers(self, r, stats_template):
        self.assertEqual(r.returncode, 0, r.stderr)
        for rank in (0, 1):
            self.assertIn(f"rank {rank} step 1 loss", r.stdout)
            stats = Path(stats_template.format(rank=rank))
            self.assertTrue(stats.exists(), f"rank {rank} wrote no {stats}: {r.stderr}")
            report = json.loads(stats.read_text())
            self.assertEqual(report["schema"], 1)
            self.assertEqual(report["rank"], rank)
            self.assertIn("CUDA is not available", report["why_not"])
        self.assertFalse((self.dir / "stats.rank{rank}.json").exists())
        # Once per worker, never in the launcher.
        self.assertEqual(r.stderr.count("CUDA is not available"), 2, r.stderr)

    def test_deepum_run_around_torchrun(self):
        stats = str(self.dir / "stats.rank{rank}.json")
        r = self.run_command([str(DEEPUM_RUN), "--stats", stats, "--", "torchrun",
                              "--nproc_per_node=2", str(EXAMPLE), *TINY])
        self.assertIn("launcher has deepum: False", r.stdout)
        self.check_workers(r, stats)

    def test_torchrun_around_deepum_run(self):
        stats = str(self.dir / "stats.rank{rank}.json")
        r = self.run_command(["torchrun", "--nproc_per_node=2", "--no-python", str(DEEPUM_RUN),
                              "--stats", stats, sys.executable, str(EXAMPLE), *TINY])
        self.check_workers(r, stats)

    def test_each_rank_reads_its_own_plan(self):
        # rank 0's plan exists, rank 1's does not: rank 1 names its own missing plan.
        # --plan asks for deepum, so every worker stops before training (no CUDA here).
        (self.dir / "plan.rank0.pb").write_bytes(b"\n")
        plan = str(self.dir / "plan.rank{rank}.pb")
        r = self.run_command([str(DEEPUM_RUN), "--plan", plan, "--", "torchrun",
                              "--nproc_per_node=2", str(EXAMPLE), *TINY])
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("step 0 loss", r.stdout)
        errors = [l for l in r.stderr.splitlines() if l.startswith("deepum: error: ")]
        self.assertEqual(len(errors), 2, r.stderr)
        self.assertTrue(any(f"plan {self.dir}/plan.rank1.pb: No such file" in l for l in errors),
                        r.stderr)
        self.assertFalse(any("plan.rank0.pb" in l for l in errors), r.stderr)


if __name__ == "__main__":
    unittest.main()
