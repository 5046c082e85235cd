"""Workloads users train today: an encoder-decoder (bart-large), a Llama-shaped 1B decoder
under bf16 autocast with fp32 master weights, and activation checkpointing.

Full-size models are only built on the meta device (shapes, no memory); traced steps run
tiny configurations of the same code."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

from deepum_trace import __main__ as cli
from deepum_trace import build, capture, devices, models, pb
from deepum_trace.pipeline import trace_workload

torch.set_num_threads(1)
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
TINY_LLAMA = models.LlamaConfig(layers=2, hidden=64, heads=8, kv_heads=2, ffn=96, vocab=100,
                                max_positions=32)
TINY_BART = models.TransformerConfig(layers=2, hidden=32, heads=4, ffn=64, vocab=50,
                                     max_positions=16)
MATMULS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def tiny_llama(checkpointing=False, device="cpu"):
    torch.manual_seed(0)
    return models.llama_workload(TINY_LLAMA, seq_len=16, checkpointing=checkpointing).to(device)


def tiny_bart(device="cpu"):
    torch.manual_seed(0)
    return models.bart_workload(TINY_BART, seq_len=8).to(device)


def profile_of(trace, iterations=2):
    module = pb.load()
    prof, stats = build.build_profile(module, trace, devices.load_device_model("v100-pcie-16gb"),
                                      iterations, {"model": "tiny", "batch_size": trace.batch})
    return module, prof, stats


def trace_summary(trace):
    return (trace.events, [(s.nbytes, s.role, s.label, s.persistent) for s in trace.storages],
            [(o.name, o.shapes, [(a.storage, a.offset, a.nbytes, a.mode) for a in o.accesses])
             for o in trace.ops])


def live_at_backward(trace):
    """Bytes of transient storages live when backward makes its first tensor: what the
    forward pass keeps for backward, plus the loss and the inputs."""
    live = 0
    for kind, i in trace.events:
        if kind == "alloc":
            if trace.storages[i].label.startswith("backward:"):
                return live
            live += trace.storages[i].nbytes
        elif kind == "free":
            live -= trace.storages[i].nbytes
    raise AssertionError("backward made no tensor")


class LlamaShapeTest(unittest.TestCase):
    """The full-size model, built on the meta device."""

    @classmethod
    def setUpClass(cls):
        with models.meta_init():
            cls.model = models.Llama(models.LLAMA_1B)

    def test_about_one_billion_parameters(self):
        n = sum(p.numel() for p in self.model.parameters())
        self.assertLess(abs(n - 1e9) / 1e9, 0.10, n)
        self.assertTrue(all(p.device.type == "meta" for p in self.model.parameters()))

    def test_grouped_query_attention(self):
        cfg = models.LLAMA_1B
        self.assertEqual((cfg.heads, cfg.kv_heads), (32, 8))
        d = cfg.hidden // cfg.heads
        for block in self.model.blocks:
            a = block.attn
            self.assertEqual(a.q.weight.shape, (cfg.heads * d, cfg.hidden))
            self.assertEqual(a.k.weight.shape, (cfg.kv_heads * d, cfg.hidden))
            self.assertEqual(a.v.weight.shape, (cfg.kv_heads * d, cfg.hidden))
            self.assertIsNone(a.q.bias)

    def test_rmsnorm_swiglu_tied_head(self):
        self.assertEqual(len(self.model.blocks), 16)
        self.assertFalse(any(isinstance(m, nn.LayerNorm) for m in self.model.modules()))
        norms = [m for m in self.model.modules() if isinstance(m, models.RMSNorm)]
        self.assertEqual(len(norms), 2 * 16 + 1)
        mlp = self.model.blocks[0].mlp
        self.assertEqual((mlp.gate.out_features, mlp.up.out_features, mlp.down.in_features),
                         (8192, 8192, 8192))
        # Tied: no separate output projection.
        self.assertEqual(sum(1 for p in self.model.parameters() if p.shape == (32000, 2048)), 1)


class LlamaBehaviourTest(unittest.TestCase):
    def test_gqa_heads_share_keys(self):
        """Query heads of one group attend with the same keys: identical queries in two heads
        of a group give identical outputs, in two heads of different groups (generally) not."""
        torch.manual_seed(0)
        attn = models.GqaAttention(TINY_LLAMA)
        model = models.Llama(TINY_LLAMA)
        d = TINY_LLAMA.hidden // TINY_LLAMA.heads
        with torch.no_grad():
            w = attn.q.weight.view(TINY_LLAMA.heads, d, -1)
            w[1] = w[0]     # heads 0 and 1: group 0
            w[4] = w[0]     # head 4: group 1
            attn.o.weight.copy_(torch.eye(TINY_LLAMA.hidden))
            out = attn(torch.randn(1, 10, TINY_LLAMA.hidden), model.cos, model.sin,
                       model.future).view(1, 10, TINY_LLAMA.heads, d)
        torch.testing.assert_close(out[:, :, 0], out[:, :, 1])
        self.assertFalse(torch.allclose(out[:, :, 0], out[:, :, 4]))

    def test_causal(self):
        torch.manual_seed(0)
        model = models.Llama(TINY_LLAMA).eval()
        ids = torch.randint(0, TINY_LLAMA.vocab, (1, 12))
        changed = ids.clone()
        changed[0, 8] = (ids[0, 8] + 1) % TINY_LLAMA.vocab
        with torch.no_grad():
            a, b = model(ids), model(changed)
        torch.testing.assert_close(a[:, :8], b[:, :8])
        self.assertFalse(torch.allclose(a[:, 8:], b[:, 8:]))

    def test_autocast_bf16_compute_fp32_master_weights(self):
        w = tiny_llama()
        data = w.make_batch(2)
        loss = w.loss(w.model, data)
        self.assertEqual(loss.dtype, torch.float32)
        loss.backward()
        for p in w.model.parameters():
            self.assertEqual((p.dtype, p.grad.dtype), (torch.float32, torch.float32))
        with models.bf16_autocast():
            logits = w.model(data["input_ids"])
        self.assertEqual(logits.dtype, torch.bfloat16)

    def test_checkpointing_gives_the_same_gradients(self):
        grads = []
        for checkpointing in (False, True):
            w = tiny_llama(checkpointing)
            torch.manual_seed(1)
            w.loss(w.model, w.make_batch(2)).backward()
            grads.append([p.grad for p in w.model.parameters()])
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b)


class LlamaTraceTest(unittest.TestCase):
    """A traced step of the tiny configuration, without and with checkpointing."""

    @classmethod
    def setUpClass(cls):
        cls.plain, _ = trace_workload(tiny_llama(), 2, direct=True)
        cls.checkpointed, _ = trace_workload(tiny_llama(checkpointing=True), 2, direct=True)

    def test_valid_profile(self):
        module, prof, stats = profile_of(self.plain)
        self.assertEqual(build.check_profile(prof), [])
        self.assertEqual(stats.peak_live_bytes, build.peak_live_bytes(prof))
        self.assertEqual(stats.footprint_blocks, build.footprint_blocks(prof))
        self.assertGreater(stats.footprint_blocks, 0)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny.profile.pb.gz")
            build.write_profile(path, prof)
            self.assertEqual(build.read_profile(module, path), prof)

    def test_bf16_activations(self):
        """Every GEMM reads and writes bf16 (2 bytes an element), parameters stay fp32 (4)."""
        t = self.plain
        gemms = [o for o in t.ops if o.name in MATMULS]
        self.assertGreater(len(gemms), 0)
        for o in gemms:
            self.assertEqual({dtype for dtype, _, _ in o.shapes}, {"bfloat16"}, o.name)
        # The fresh output of a forward projection is a bf16 activation of b*s*n elements.
        first = gemms[0]
        _, shape, _ = first.shapes[-1]
        out = first.accesses[-1]
        self.assertEqual(t.storages[out.storage].role, "ACTIVATION")
        self.assertEqual(t.storages[out.storage].nbytes, 2 * shape[0] * shape[1])
        for s in t.storages:
            if s.role == "PARAMETER":
                self.assertEqual(s.nbytes % 4, 0)
        params = sum(s.nbytes for s in t.storages if s.role == "PARAMETER")
        self.assertEqual(params, 4 * sum(p.numel() for p in tiny_llama().model.parameters()))
        # The bf16 weight copies autocast makes are activations, not extra parameters.
        casts = [o for o in t.ops if o.name == "aten::_to_copy"]
        self.assertGreater(len(casts), 0)

    def test_checkpointing_keeps_fewer_activations(self):
        plain, ckpt = live_at_backward(self.plain), live_at_backward(self.checkpointed)
        self.assertLess(ckpt, plain)
        _, p_persistent, p_peak = capture.summarize(self.plain)
        _, c_persistent, c_peak = capture.summarize(self.checkpointed)
        self.assertEqual(p_persistent, c_persistent)
        self.assertLess(c_peak, p_peak)
        # The blocks' forward runs again in backward: more kernels, not fewer.
        self.assertGreater(len(self.checkpointed.ops), len(self.plain.ops))
        _, prof, _ = profile_of(self.checkpointed)
        self.assertEqual(build.check_profile(prof), [])

    def test_meta_traces_like_cpu(self):
        """The autocast policy and checkpointing act the same on the meta device."""
        for checkpointing in (False, True):
            cpu = self.checkpointed if checkpointing else self.plain
            meta, _ = trace_workload(tiny_llama(checkpointing, "meta"), 2, direct=True)
            self.assertEqual(trace_summary(meta), trace_summary(cpu))


class BartTest(unittest.TestCase):
    def test_full_size_shape(self):
        with models.meta_init():
            model = models.Bart(models.BART_LARGE)
        self.assertEqual((len(model.encoder), len(model.decoder)), (12, 12))
        for layer in model.decoder:
            self.assertIsInstance(layer.cross_attn, models.BartAttention)
            self.assertEqual(layer.cross_attn.k.weight.shape, (1024, 1024))
        self.assertFalse(any(hasattr(layer, "cross_attn") for layer in model.encoder))
        n = sum(p.numel() for p in model.parameters())
        self.assertLess(abs(n - 406e6) / 406e6, 0.03, n)   # BART-large: 406M

    def test_decoder_reads_the_encoder(self):
        """Cross-attention: the source changes every target position's logits."""
        torch.manual_seed(0)
        model = models.Bart(TINY_BART).eval()
        source = torch.randint(0, TINY_BART.vocab, (1, 8))
        target = torch.randint(0, TINY_BART.vocab, (1, 6))
        other = (source + 1) % TINY_BART.vocab
        with torch.no_grad():
            a, b = model(source, target), model(other, target)
        self.assertEqual(a.shape, (1, 6, TINY_BART.vocab))
        for position in range(6):
            self.assertFalse(torch.allclose(a[:, position], b[:, position]))

    def test_traced_step(self):
        trace, _ = trace_workload(tiny_bart(), 2, direct=True)
        meta, _ = trace_workload(tiny_bart("meta"), 2, direct=True)
        self.assertEqual(trace_summary(meta), trace_summary(trace))
        _, prof, _ = profile_of(trace)
        self.assertEqual(build.check_profile(prof), [])
        # Forward projections: 4 attention + 2 feed-forward per encoder layer, 4 + 4
        # (cross-attention) + 2 per decoder layer, and the LM head.
        projections = [s for s in trace.storages if s.label == "forward:aten::addmm"]
        self.assertEqual(len(projections), TINY_BART.layers * (6 + 10) + 1)


class CommandLineTest(unittest.TestCase):
    def test_help_names_the_trace_batches_in_use(self):
        text = " ".join(cli.parser().format_help().split())
        self.assertIn("default: 2,4 for torchvision models, 2,3 for transformers", text)
        self.assertEqual(models.Workload.__dataclass_fields__["trace_batches"].default, (2, 4))
        for build_tiny in (tiny_llama, tiny_bart):
            self.assertEqual(build_tiny().trace_batches, (2, 3))
        for name in ("bert-large", "gpt2-medium"):
            with models.meta_init():
                self.assertEqual(models.build_workload(name, seq_len=8).trace_batches, (2, 3))

    def test_checkpointing_only_where_supported(self):
        with self.assertRaises(ValueError):
            models.build_workload("gpt2-medium", checkpointing=True)

    def test_llama_1b_end_to_end(self):
        """The full-size model at a short sequence, built and traced on the meta device: its
        stderr line reports peak live bytes beside the distinct 2 MiB blocks, and the planner
        has no note on the previous iteration's allocations, which all die at its end."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "llama.profile.pb.gz")
            run = subprocess.run(
                [sys.executable, "-m", "deepum_trace", "--model", "llama-1b", "--checkpointing",
                 "--batch", "2", "--seq-len", "8", "--compute", "meta", "--direct",
                 "--iterations", "2", "-o", out],
                cwd=PYTHON_DIR, capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stderr)
            prof = build.read_profile(pb.load(), out)
            self.assertEqual(build.check_profile(prof), [])
            self.assertEqual(prof.workload.parameter_count, 1038682112)
            self.assertIn("activation checkpointing", prof.workload.notes)
            blocks = build.footprint_blocks(prof)
            peak = build.peak_live_bytes(prof)
            self.assertIn(f"peak live {peak / 2**30:.2f} GiB, {blocks} distinct 2 MiB blocks",
                          run.stderr)
            # fp32 parameters, gradients and two AdamW moments: at least 16 bytes a parameter.
            self.assertGreaterEqual(peak, 16 * 1038682112)
            self.assertGreaterEqual(blocks * build.UM_BLOCK_BYTES, 16 * 1038682112)

            plan = shutil.which("deepum-plan") or os.path.join(REPO, "build", "tools",
                                                                "deepum-plan")
            if not os.access(plan, os.X_OK):
                self.skipTest("deepum-plan is not built")
            planned = subprocess.run([plan, out, "--gpu-memory=8GiB", "-o",
                                      os.path.join(tmp, "plan.pb")],
                                     capture_output=True, text=True, timeout=600)
            self.assertEqual(planned.returncode, 0, planned.stderr)
            self.assertIn("iteration 1 is the reference", planned.stdout)
            self.assertNotIn("carried in", planned.stdout + planned.stderr)

if __name__ == "__main__":
    unittest.main()
