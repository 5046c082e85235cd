#!/usr/bin/env python3
"""bench/gpu/alternatives.py on the CPU: every alternative trains the tiny model to the
control's losses and parameters.

    python3 bench/gpu/test_alternatives.py -v

Checkpointing recomputes each block's forward pass, save_on_cpu and the offload hooks
move every saved activation out and back (--offload-min-bytes 0, so all of them on a
model this small): each must give exactly the losses and final parameters of the run
without them, and the offload run must have moved tensors (the hooks were in use).
A GPU is not needed; the GPU runs are bench/gpu/run.sh's alternatives step.
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import alternatives  # noqa: E402

STEPS = 3


def run(mode, tmp, *extra):
    save = Path(tmp) / f"{mode}.pt"
    out = subprocess.run([sys.executable, str(HERE / "alternatives.py"), "--model", "tiny",
                          "--device", "cpu", "--steps", str(STEPS), "--mode", mode,
                          "--save", str(save), *extra],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"{mode}: exit {out.returncode}\n{out.stdout}{out.stderr}")
    losses = [line.split()[3] for line in out.stdout.splitlines() if line.startswith("step ")]
    return losses, torch.load(save), out.stdout


class Alternatives(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.losses, cls.params, _ = run("none", cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def same_as_control(self, mode, *extra):
        losses, params, stdout = run(mode, self.tmp.name, *extra)
        self.assertEqual(len(losses), STEPS)
        self.assertEqual(losses, self.losses, mode)
        self.assertEqual(sorted(params), sorted(self.params))
        for name, p in params.items():
            self.assertTrue(torch.equal(p, self.params[name]), f"{mode}: {name} differs")
        return stdout

    def test_the_control_learns(self):
        self.assertEqual(len(self.losses), STEPS)
        self.assertNotEqual(self.losses[0], self.losses[-1])

    def test_checkpointing_the_blocks(self):
        self.same_as_control("checkpoint")

    def test_save_on_cpu(self):
        self.same_as_control("save_on_cpu")

    def test_offload_on_a_side_stream(self):
        stdout = self.same_as_control("offload", "--offload-min-bytes", "0")
        moved = [line for line in stdout.splitlines() if line.startswith("offload: ")]
        self.assertEqual(len(moved), 1, stdout)
        self.assertGreater(int(moved[0].split()[1]), 0, moved[0])

    def test_checkpointing_recomputes(self):
        # The wrapper must really checkpoint: each block's forward runs twice per step.
        model = alternatives.TinyNet()
        calls = []
        for block in model.blocks:
            block.conv1.register_forward_hook(lambda *_: calls.append(1))
        alternatives.checkpoint_blocks(list(model.blocks))
        x = torch.randn(2, 3, 16, 16)
        model(x).sum().backward()
        self.assertEqual(len(calls), 2 * len(model.blocks))

    def test_offload_moves_activations_out(self):
        # What the forward pass saves lives in the hooks' host buffers, not in the tensor.
        hooks = alternatives.OffloadHooks(torch.device("cpu"), min_bytes=0)
        w = torch.nn.Parameter(torch.randn(4, 4))
        x = torch.randn(4, 4)
        with hooks:
            y = torch.relu(x @ w)
        saved = y.grad_fn.next_functions[0][0]._saved_self
        self.assertGreater(hooks.packed, 0)
        self.assertTrue(torch.equal(saved, x))
        self.assertNotEqual(saved.data_ptr(), x.data_ptr())

    def test_bad_input_is_one_line(self):
        out = subprocess.run([sys.executable, str(HERE / "alternatives.py"), "--device", "cpu",
                              "--memory-bytes", "1000"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stderr.strip().count("\n"), 0, out.stderr)
        self.assertIn("needs a CUDA device", out.stderr)


if __name__ == "__main__":
    unittest.main()
