"""The tracer under torchrun: two gloo workers on the CPU trace one DistributedDataParallel
rank each and write one profile per rank, which deepum-inspect reads and deepum-plan plans.

Debian's torch 1.13 torchrun fails on Python 3.11 before it starts a worker, so the workers
are started as torchrun starts them: one process per rank, with RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set. DEEPUM_TOOLS names the
directory holding deepum-plan and deepum-inspect (ctest sets it); without it those checks
skip.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from deepum_trace import build, distributed, pb

PYTHON_DIR = Path(__file__).resolve().parents[1]
# Batch 6 extrapolated from traced batches 2 and 4: every rank takes the same two warm-up
# and two traced steps, so their collectives pair up.
TINY = ["--model", "resnet18", "--image-size", "32", "--batch", "6", "--iterations", "2",
        "--quiet", "--dist-timeout", "120"]
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plain_env():
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS}
    env["OMP_NUM_THREADS"] = "1"
    return env


def trace(args):
    """The tracer in one process, outside torchrun."""
    return subprocess.run([sys.executable, "-m", "deepum_trace", *args], cwd=PYTHON_DIR,
                          env=plain_env(), capture_output=True, text=True, timeout=300)


def torchrun(nproc, args):
    """The tracer in nproc workers as torchrun starts them: [(returncode, stderr)] by rank."""
    port = str(free_port())
    workers = []
    for rank in range(nproc):
        env = dict(plain_env(), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        workers.append(subprocess.Popen([sys.executable, "-m", "deepum_trace", *args],
                                        cwd=PYTHON_DIR, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for w in workers:
            _, err = w.communicate(timeout=300)
            results.append((w.returncode, err))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    return results


def allocations(prof, role=None, prefix=None):
    module = pb.load()
    return [a for a in prof.allocations
            if (role is None or a.role == module.AllocationRole.Value("ALLOCATION_ROLE_" + role))
            and (prefix is None or a.label.startswith(prefix))]


def persistent_bytes(prof, role):
    """Bytes of `role` allocated before the first kernel and never freed."""
    return sum(a.size_bytes for a in allocations(prof, role) if a.alloc_time_ns == 0
               and not a.freed)


class TwoRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        cls.template = str(cls.dir / "r{rank}.profile.pb.gz")
        cls.results = torchrun(2, [*TINY, "-o", cls.template])
        single = trace([*TINY, "-o", str(cls.dir / "single.profile.pb.gz")])
        assert single.returncode == 0, single.stderr
        module = pb.load()
        cls.single = build.read_profile(module, cls.dir / "single.profile.pb.gz")
        cls.ranks = []
        for rank, (code, err) in enumerate(cls.results):
            assert code == 0, f"rank {rank}: {err}"
            cls.ranks.append(build.read_profile(module, cls.template.format(rank=rank)))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_profile_per_rank(self):
        self.assertEqual(sorted(p.name for p in self.dir.glob("r*.profile.pb.gz")),
                         ["r0.profile.pb.gz", "r1.profile.pb.gz"])
        self.assertFalse((self.dir / "r{rank}.profile.pb.gz").exists())
        for rank, prof in enumerate(self.ranks):
            self.assertEqual(build.check_profile(prof), [])
            self.assertEqual(prof.workload.batch_size, 6)
            self.assertIn("extrapolated linearly from traced batches 2 and 4",
                          prof.workload.notes)
            self.assertEqual(len(prof.iterations), 2)
            self.assertEqual(prof.device.ordinal, rank)
            self.assertIn(f"Rank {rank} (local rank {rank}) of 2 in data-parallel training",
                          prof.workload.notes)
        self.assertNotIn("data-parallel", self.single.workload.notes)

    def test_each_rank_holds_ddp_gradient_buckets(self):
        # Without gradient_as_bucket_view, DDP's reducer copies every gradient into a flat
        # bucket, allreduces the bucket and copies it back: one more copy of the gradients,
        # allocated before the step and kept across iterations.
        parameters = persistent_bytes(self.single, "PARAMETER")
        gradients = persistent_bytes(self.single, "GRADIENT")
        self.assertEqual(gradients, parameters)
        self.assertEqual(allocations(self.single, prefix="ddp."), [])
        for prof in self.ranks:
            buckets = allocations(prof, prefix="ddp.gradient_bucket")
            self.assertGreaterEqual(len(buckets), 2)   # DDP's small first bucket, then 25 MiB
            for b in buckets:
                self.assertEqual(b.role, pb.load().AllocationRole.Value("ALLOCATION_ROLE_GRADIENT"))
                self.assertEqual((b.alloc_time_ns, b.freed), (0, False), b.label)
            self.assertEqual(sum(b.size_bytes for b in buckets), parameters)
            self.assertEqual(persistent_bytes(prof, "PARAMETER"), parameters)
            self.assertEqual(persistent_bytes(prof, "GRADIENT"), 2 * gradients)
            self.assertEqual(allocations(prof, prefix="backward:untracked"), [])
            # The reducer's copies into and out of the buckets are kernels of each iteration.
            bucket_ids = {b.id for b in buckets}
            touching = [k for k in prof.kernels if any(t.allocation_id in bucket_ids
                                                       for t in k.tensors)]
            self.assertGreater(len(touching), 0)
            self.assertGreater(len(prof.kernels), len(self.single.kernels))

    def test_deepum_inspect_and_deepum_plan_per_rank(self):
        tools = os.environ.get("DEEPUM_TOOLS")
        if not tools:
            self.skipTest("DEEPUM_TOOLS (the directory of deepum-plan and deepum-inspect) not set")
        for rank, prof in enumerate(self.ranks):
            profile = self.template.format(rank=rank)
            r = subprocess.run([os.path.join(tools, "deepum-inspect"), "--json", profile],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            report = json.loads(r.stdout)
            self.assertEqual(report["kind"], "profile")
            self.assertEqual(report["allocations"], len(prof.allocations))
            # The buckets double the gradients deepum-inspect counts.
            self.assertEqual(report["peak_live_bytes_by_role"]["gradient"],
                             2 * persistent_bytes(self.single, "PARAMETER"))
            plan = self.dir / f"r{rank}.plan.pb"
            r = subprocess.run([os.path.join(tools, "deepum-plan"), profile, "--gpu-memory",
                                "128MiB", "-o", str(plan)],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(plan.stat().st_size, 0)


class OutputPerRank(unittest.TestCase):
    def test_ranks_sharing_one_file_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "same.profile.pb.gz")
            for code, err in torchrun(2, [*TINY, "-o", out]):
                self.assertEqual(code, 2, err)
                self.assertIn(f"error: -o {out}: all 2 ranks would write this one file; "
                              "put {rank} in the path", err)
            self.assertEqual(os.listdir(tmp), [])

    def test_paths(self):
        one = distributed.World(rank=0, local_rank=0, size=1, local_size=1)
        self.assertEqual(distributed.output_path("a.pb.gz", one), "a.pb.gz")
        self.assertEqual(distributed.output_path("a{rank}.pb.gz", one), "a0.pb.gz")
        two_nodes = distributed.World(rank=3, local_rank=1, size=4, local_size=2)
        self.assertEqual(distributed.output_path("r{rank}.l{local_rank}", two_nodes), "r3.l1")
        with self.assertRaises(distributed.DistributedError):
            distributed.output_path("a.pb.gz", two_nodes)
        # {local_rank} tells ranks apart only on a single node.
        with self.assertRaises(distributed.DistributedError):
            distributed.output_path("l{local_rank}.pb.gz", two_nodes)
        one_node = distributed.World(rank=1, local_rank=1, size=2, local_size=2)
        self.assertEqual(distributed.output_path("l{local_rank}.pb.gz", one_node), "l1.pb.gz")

    def test_environment(self):
        self.assertEqual(distributed.from_environ({}), distributed.World(0, 0, 1, 1))
        world = distributed.from_environ({"RANK": "1", "WORLD_SIZE": "2",
                                          "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"})
        self.assertEqual(world, distributed.World(1, 1, 2, 2))
        with self.assertRaisesRegex(distributed.DistributedError, "MASTER_PORT not set"):
            distributed.from_environ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h"})
        with self.assertRaisesRegex(distributed.DistributedError, "not a rank of"):
            distributed.from_environ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h",
                                      "MASTER_PORT": "1"})


if __name__ == "__main__":
    unittest.main()
