"""Tracer tests: a hand-checkable model, extrapolation against direct traces, real models."""

import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import torch
import torch.nn as nn
import torch.nn.functional as F

from deepum_trace import build, devices, extrapolate, models, pb
from deepum_trace.capture import READ, READ_WRITE, WRITE, Access, Op, Storage, Trace
from deepum_trace.pipeline import trace_workload

torch.set_num_threads(1)
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_TRANSFORMER = models.TransformerConfig(layers=2, hidden=32, heads=4, ffn=64, vocab=50,
                                            max_positions=16)


def linear_workload():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)
    return models.Workload("linear", model, optimizer,
                           lambda b: {"x": torch.randn(b, 4), "y": torch.randn(b, 3)},
                           lambda m, d: F.mse_loss(m(d["x"]), d["y"]))


def small_cnn():
    torch.manual_seed(0)
    return models.torchvision_workload("resnet18", image_size=32)


def trace_summary(trace):
    """Everything a trace says, as comparable plain data."""
    return {
        "events": trace.events,
        "storages": [(s.nbytes, s.role, s.label, s.persistent) for s in trace.storages],
        "ops": [(o.name, o.shapes, o.work, o.matmul,
                 [(a.storage, a.offset, a.nbytes, a.mode) for a in o.accesses])
                for o in trace.ops],
        "flops": [o.flops for o in trace.ops],
    }


class LinearModelTest(unittest.TestCase):
    """nn.Linear(4, 3) + MSE + SGD with momentum, batch 2: every op checked by hand."""

    @classmethod
    def setUpClass(cls):
        cls.workload = linear_workload()
        cls.trace, _ = trace_workload(cls.workload, 2, direct=True)

    def test_storages(self):
        s = self.trace.storages
        self.assertEqual([(x.label, x.role, x.nbytes) for x in s[:8]], [
            ("weight", "PARAMETER", 48), ("bias", "PARAMETER", 12),
            ("weight.grad", "GRADIENT", 48), ("bias.grad", "GRADIENT", 12),
            ("weight.momentum_buffer", "OPTIMIZER_STATE", 48),
            ("bias.momentum_buffer", "OPTIMIZER_STATE", 12),
            ("x", "INPUT", 32), ("y", "INPUT", 24)])
        self.assertTrue(all(x.persistent for x in s[:6]))
        self.assertFalse(any(x.persistent for x in s[6:]))

    def test_operators_and_access_modes(self):
        W, B, GW, GB, MW, MB, X, Y = range(8)
        ops = [(o.name, [(a.storage, a.nbytes, a.mode) for a in o.accesses])
               for o in self.trace.ops]
        # Temporaries are numbered from 8 in creation order.
        out, loss, ones, gout, gw, gb = range(8, 14)
        self.assertEqual(ops, [
            # zero_grad: gradients overwritten, not read
            ("aten::zero_", [(GW, 48, WRITE)]),
            ("aten::zero_", [(GB, 12, WRITE)]),
            # forward: out = x @ W.T + b (the transpose is a view: no kernel)
            ("aten::addmm", [(W, 48, READ), (B, 12, READ), (X, 32, READ), (out, 24, WRITE)]),
            ("aten::mse_loss", [(Y, 24, READ), (out, 24, READ), (loss, 4, WRITE)]),
            # backward
            ("aten::ones_like", [(loss, 4, READ), (ones, 4, WRITE)]),
            ("aten::mse_loss_backward", [(Y, 24, READ), (out, 24, READ), (ones, 4, READ),
                                         (gout, 24, WRITE)]),
            ("aten::mm", [(X, 32, READ), (gout, 24, READ), (gw, 48, WRITE)]),
            ("aten::sum", [(gout, 24, READ), (gb, 12, WRITE)]),
            ("aten::add_", [(GB, 12, READ_WRITE), (gb, 12, READ)]),     # accumulate grads
            ("aten::add_", [(GW, 48, READ_WRITE), (gw, 48, READ)]),
            # SGD: buf = buf * momentum + grad; param -= lr * buf
            ("aten::mul_", [(MW, 48, READ_WRITE)]),
            ("aten::add_", [(GW, 48, READ), (MW, 48, READ_WRITE)]),
            ("aten::add_", [(W, 48, READ_WRITE), (MW, 48, READ)]),
            ("aten::mul_", [(MB, 12, READ_WRITE)]),
            ("aten::add_", [(GB, 12, READ), (MB, 12, READ_WRITE)]),
            ("aten::add_", [(B, 12, READ_WRITE), (MB, 12, READ)]),
        ])
        flops = {o.name: o.flops for o in self.trace.ops}
        self.assertEqual(flops["aten::addmm"], 2 * 2 * 3 * 4 + 6)
        self.assertEqual(flops["aten::mm"], 2 * 3 * 4 * 2)

    def test_lifetimes(self):
        events = self.trace.events
        # The forward output lives until the loss backward that reads it, then dies.
        out = 8
        alloc, free = events.index(("alloc", out)), events.index(("free", out))
        mse_bwd = events.index(("op", 5))
        self.assertLess(alloc, mse_bwd)
        self.assertEqual(free, mse_bwd + 1)
        # Every temporary is allocated once and freed once; persistent ones never appear.
        for i, s in enumerate(self.trace.storages):
            n_alloc, n_free = events.count(("alloc", i)), events.count(("free", i))
            self.assertEqual((n_alloc, n_free), (0, 0) if s.persistent else (1, 1))

    def test_profile(self):
        module = pb.load()
        device = devices.load_device_model("v100-pcie-16gb")
        prof, stats = build.build_profile(module, self.trace, device, 2, {
            "model": "linear", "batch_size": 2, "parameter_count": 15})
        self.assertEqual(build.check_profile(prof), [])
        self.assertEqual(stats.parameter_bytes, 60)
        self.assertEqual(stats.kernels_per_iteration, 16)
        self.assertEqual(len(prof.kernels), 32)
        self.assertEqual([(i.first_kernel, i.kernel_count) for i in prof.iterations],
                         [(0, 16), (16, 16)])
        # Tiny kernels all take the launch floor; the timeline is back to back from 0.
        self.assertEqual(prof.kernels[0].start_ns, 0)
        self.assertEqual({k.end_ns - k.start_ns for k in prof.kernels}, {3000})
        self.assertEqual(prof.iterations[1].end_ns, 32 * 3000)
        persistent = [a for a in prof.allocations if not a.freed]
        self.assertEqual(len(persistent), 6)
        self.assertTrue(all(a.alloc_time_ns == 0 for a in persistent))
        params = [a for a in prof.allocations if a.role == module.ALLOCATION_ROLE_PARAMETER]
        self.assertEqual(sorted(a.size_bytes for a in params), [12, 48])
        self.assertEqual({a.label for a in params}, {"weight", "bias"})
        # Iteration 2 re-allocates its temporaries: 8 per iteration.
        self.assertEqual(len(prof.allocations), 6 + 2 * 8)
        k = prof.kernels[2]
        self.assertEqual(k.name, "aten::addmm")
        self.assertEqual(k.flops, 54.0)
        self.assertEqual(k.dram_bytes, 48 + 12 + 32 + 24)
        self.assertEqual(k.block.x, 256)
        self.assertEqual(prof.access_source, module.ACCESS_SOURCE_DERIVED_TRACE)
        self.assertEqual(prof.um_block_bytes, 2 * 1024 * 1024)
        self.assertEqual(prof.device.memory_bytes, 17179869184)


class ExtrapolationTest(unittest.TestCase):
    def check_prediction(self, make_workload, small, large, target):
        predicted, _ = trace_workload(make_workload(), target, trace_batches=(small, large))
        direct, _ = trace_workload(make_workload(), target, direct=True)
        p, d = trace_summary(predicted), trace_summary(direct)
        self.assertEqual(p["events"], d["events"])
        self.assertEqual([o[0] for o in p["ops"]], [o[0] for o in d["ops"]])
        self.assertEqual(p["storages"], d["storages"])
        self.assertEqual(p["ops"], d["ops"])
        for fp, fd in zip(p["flops"], d["flops"]):
            self.assertLessEqual(abs(fp - fd), 0.01 * fd)

    def test_cnn_batch_8_from_2_and_4(self):
        self.check_prediction(small_cnn, 2, 4, 8)

    def test_transformer_batch_8_from_2_and_4(self):
        self.check_prediction(lambda: models.gpt2_workload(TINY_TRANSFORMER, 16, "tiny-gpt"),
                              2, 4, 8)

    def test_batch_1_takes_other_paths_and_is_refused(self):
        # At batch 1 reshapes of the attention heads are views; from batch 2 on they copy.
        workload = models.bert_workload(TINY_TRANSFORMER, 16, "tiny-bert")
        with self.assertRaisesRegex(extrapolate.ExtrapolationError, "differ"):
            trace_workload(workload, 8, trace_batches=(1, 2))

    def test_meta_device_traces_like_real_compute(self):
        # gpt2-medium ships traced on the meta device: shapes only, same operators.
        for build_workload in (models.gpt2_workload, models.bert_workload):
            def make(device):
                torch.manual_seed(0)
                return build_workload(TINY_TRANSFORMER, 16, "tiny").to(device)
            real, _ = trace_workload(make("cpu"), 3, direct=True)
            meta, _ = trace_workload(make("meta"), 3, direct=True)
            self.assertEqual(trace_summary(real), trace_summary(meta))


def hand_trace(batch, events):
    """Two activations (8 bytes per sample) and one operator per ("op", i) in `events`, the
    i-th reading activation 0 and writing activation 1."""
    trace = Trace(batch=batch, events=list(events))
    trace.storages = [Storage(8 * batch, "ACTIVATION", f"a{i}", False) for i in range(2)]
    n_ops = sum(kind == "op" for kind, _ in events)
    trace.ops = [Op("aten::relu", [("float32", (2 * batch,), False),
                                   ("float32", (2 * batch,), True)], (),
                    [Access(0, 0, 8 * batch, READ), Access(1, 0, 8 * batch, WRITE)])
                 for _ in range(n_ops)]
    return trace


class FreeOrderTest(unittest.TestCase):
    """A free seen earlier in one traced step than in the other (another thread let go of
    the storage) is kept at the later point; any other difference in order is refused."""
    OPS = [("alloc", 0), ("op", 0), ("alloc", 1), ("op", 1), ("op", 2)]

    def with_frees(self, where):
        """OPS with ("free", s) inserted before OPS[n] for each (n, s) in `where`."""
        events = list(self.OPS)
        for n, s in sorted(where, reverse=True):
            events.insert(n, ("free", s))
        return events

    def test_equal_orders_are_kept(self):
        events = self.with_frees([(4, 0), (5, 1)])
        out = extrapolate.extrapolate(hand_trace(2, events), hand_trace(4, events), 8)
        self.assertEqual(out.events, events)
        self.assertEqual(out.moved_frees, 0)
        self.assertEqual([s.nbytes for s in out.storages], [64, 64])

    def test_a_free_seen_at_two_points_is_kept_at_the_later(self):
        early = self.with_frees([(2, 0), (5, 1)])     # storage 0 freed before "alloc 1"
        late = self.with_frees([(4, 0), (5, 1)])      # ... or only after operator 1
        for small, large in ((early, late), (late, early)):
            out = extrapolate.extrapolate(hand_trace(2, small), hand_trace(4, large), 8)
            self.assertEqual(out.events, late)
            self.assertEqual(out.moved_frees, 1)

    def test_frees_at_one_point_keep_the_small_traces_order(self):
        small = self.with_frees([(5, 1), (5, 0)])
        large = self.with_frees([(3, 0), (5, 1)])
        out = extrapolate.extrapolate(hand_trace(2, small), hand_trace(4, large), 8)
        self.assertEqual(out.events, small)
        self.assertEqual(out.moved_frees, 1)

    def test_other_differences_are_refused(self):
        frees = [(5, 0), (5, 1)]
        swapped = [("alloc", 0), ("alloc", 1), ("op", 0), ("op", 1), ("op", 2),
                   ("free", 0), ("free", 1)]
        with self.assertRaisesRegex(extrapolate.ExtrapolationError,
                                    r"order of allocations and operators from event 1 on"):
            extrapolate.extrapolate(hand_trace(2, self.with_frees(frees)),
                                    hand_trace(4, swapped), 8)
        with self.assertRaisesRegex(extrapolate.ExtrapolationError, "storages freed"):
            extrapolate.extrapolate(hand_trace(2, self.with_frees(frees)),
                                    hand_trace(4, self.with_frees(frees[:1])), 8)

    def test_the_pipeline_says_when_frees_moved(self):
        workload = linear_workload()
        real = extrapolate.extrapolate
        def moving(small, large, batch):
            # The first free of the small trace seen one event earlier than traced.
            events = list(small.events)
            n = next(i for i, (kind, _) in enumerate(events) if kind == "free" and i > 0
                     and events[i - 1][0] != "free")
            events[n - 1], events[n] = events[n], events[n - 1]
            return real(Trace(small.batch, small.storages, small.ops, events), large, batch)
        with unittest.mock.patch.object(extrapolate, "extrapolate", moving):
            trace, how = trace_workload(workload, 8, trace_batches=(2, 4))
        self.assertEqual(trace.moved_frees, 1)
        self.assertIn("1 free(s) seen at different points in the two traced steps", how)
        _, how = trace_workload(linear_workload(), 8, trace_batches=(2, 4))
        self.assertNotIn("free(s)", how)


class RealModelTest(unittest.TestCase):
    def test_resnet50_parameter_bytes(self):
        torch.manual_seed(0)
        workload = models.torchvision_workload("resnet50", image_size=64)
        trace, _ = trace_workload(workload, 2, direct=True)
        module = pb.load()
        prof, _ = build.build_profile(module, trace, devices.load_device_model(), 1, {
            "model": "resnet50", "batch_size": 2})
        params = [a for a in prof.allocations if a.role == module.ALLOCATION_ROLE_PARAMETER]
        self.assertEqual(len(params), 161)
        self.assertEqual(sum(a.size_bytes for a in params), 25557032 * 4)
        self.assertEqual(workload.parameter_count, 25557032)
        self.assertEqual(build.check_profile(prof), [])

    def test_unknown_model(self):
        with self.assertRaisesRegex(ValueError, "unknown model 'resnet51'.*resnet50"):
            models.build_workload("resnet51")


class CommandLineTest(unittest.TestCase):
    ARGS = ["--model", "resnet18", "--image-size", "32", "--batch", "6", "--iterations", "2",
            "--quiet"]

    def run_cli(self, *args):
        return subprocess.run([sys.executable, "-m", "deepum_trace", *args], cwd=PYTHON_DIR,
                              capture_output=True, text=True, timeout=300)

    def test_same_command_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            outputs = []
            for name in ("a.pb.gz", "b.pb.gz"):
                path = os.path.join(tmp, name)
                result = self.run_cli(*self.ARGS, "--out", path)
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(path, "rb") as f:
                    outputs.append(f.read())
            self.assertEqual(outputs[0], outputs[1])
            prof = build.read_profile(pb.load(), path)
            self.assertEqual(prof.workload.batch_size, 6)
            self.assertEqual(len(prof.iterations), 2)
            self.assertIn("extrapolated linearly from traced batches 2 and 4",
                          prof.workload.notes)
            self.assertEqual(build.check_profile(prof), [])

    def test_unknown_model_is_a_clear_error(self):
        result = self.run_cli("--model", "resnet51", "--batch", "2", "--quiet")
        self.assertEqual(result.returncode, 2)
        self.assertIn("unknown model 'resnet51'", result.stderr)


if __name__ == "__main__":
    unittest.main()
