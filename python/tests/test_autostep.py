"""Iteration marks from optimizer steps, and the start-up hook, on a CPU-only torch."""
import importlib
import os
import subprocess
import sys
import tempfile
import textwrap
import types
import unittest
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PYTHON_DIR))

from deepum import _autostep  # noqa: E402


def fresh():
    """The module with no state: each test installs its own hook."""
    return importlib.reload(_autostep)


class GlobalHook(unittest.TestCase):
    """PyTorch 2.x: the global optimizer step post-hook."""

    def fake_optim(self):
        hooks = []
        optimizer = types.SimpleNamespace(register_optimizer_step_post_hook=hooks.append)
        return types.SimpleNamespace(optimizer=optimizer), hooks

    def test_one_mark_per_optimizer_step(self):
        auto = fresh()
        marks = []
        optim, hooks = self.fake_optim()
        self.assertTrue(auto.install(lambda: marks.append(1), optim))
        self.assertEqual(len(hooks), 1)
        for _ in range(3):
            hooks[0](object(), (), {})
        self.assertEqual(len(marks), 3)
        # A second install (deepum-run inside deepum-profile) registers nothing more.
        self.assertTrue(auto.install(lambda: marks.append(1), optim))
        self.assertEqual(len(hooks), 1)

    def test_explicit_marks_win(self):
        auto = fresh()
        marks = []
        optim, hooks = self.fake_optim()
        auto.install(lambda: marks.append("hook"), optim)
        # Iteration 1: the hook marks at the optimizer step; the script's own
        # deepum.step() right after closes the same iteration: no second mark.
        hooks[0](None, (), {})
        self.assertFalse(auto.explicit_step())
        # Later iterations: the script's calls mark, the hook is silent.
        hooks[0](None, (), {})
        self.assertTrue(auto.explicit_step())
        self.assertEqual(marks, ["hook"])

    def test_explicit_marks_without_the_hook_all_count(self):
        auto = fresh()
        self.assertTrue(auto.explicit_step())
        self.assertTrue(auto.explicit_step())


class WrappedStep(unittest.TestCase):
    """PyTorch < 2.0 has no global hook: each optimizer class's step is wrapped."""

    def test_nested_steps_mark_once(self):
        auto = fresh()

        class Optimizer:
            def __init__(self, params):
                self.params = params

        class Sgd(Optimizer):
            def step(self):
                self.params.append("sgd")

        class Special(Sgd):
            def step(self):
                super().step()
                self.params.append("special")

        marks = []
        optim = types.SimpleNamespace(Optimizer=Optimizer)
        self.assertTrue(auto.install(lambda: marks.append(1), optim))
        params = []
        opt = Special(params)
        opt.step()
        opt.step()
        Sgd(params).step()
        self.assertEqual(params, ["sgd", "special", "sgd", "special", "sgd"])
        self.assertEqual(len(marks), 3)


SCRIPT = textwrap.dedent("""
    import sys
    import torch

    explicit = sys.argv[1] == "explicit"
    marks = []
    if len(sys.argv) > 2:  # a stand-in for libdeepum's deepum_step
        import deepum
        deepum._lib = type("Lib", (), {"deepum_step": staticmethod(lambda: marks.append(1))})()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    for step in range(3):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if explicit:
            import deepum
            deepum.step()
        print(f"step {step} loss {loss.item():.6f}")
    print("marks", len(marks), file=sys.stderr)
""")


class Autoload(unittest.TestCase):
    """The start-up hook deepum-run and deepum-profile install (python/deepum/_autoload)."""

    @classmethod
    def setUpClass(cls):
        import torch
        if torch.cuda.is_available():
            raise unittest.SkipTest("a GPU is present; this checks the CPU-only path")

    def run_script(self, mode, autoload, stub=True):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        if autoload:
            from deepum import run
            env = run.build_env(run.parse(["--", "python3"]), env)
        else:
            env["PYTHONPATH"] = str(PYTHON_DIR)
        args = [sys.executable, "-c", SCRIPT, mode] + (["stub"] if stub else [])
        r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        marks = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("marks ")]
        return r.stdout, r.stderr, marks[0]

    def test_script_runs_unchanged_with_one_warning(self):
        plain, _, _ = self.run_script("implicit", autoload=False, stub=False)
        loaded, err, _ = self.run_script("implicit", autoload=True, stub=False)
        self.assertEqual(plain, loaded)
        self.assertEqual(err.count("deepum: CUDA is not available"), 1, err)

    def test_one_mark_per_optimizer_step(self):
        _, _, marks = self.run_script("implicit", autoload=True)
        self.assertEqual(marks, 3)

    def test_without_autoload_no_marks(self):
        _, _, marks = self.run_script("implicit", autoload=False)
        self.assertEqual(marks, 0)

    def test_scripts_that_mark_get_no_double_marks(self):
        _, _, marks = self.run_script("explicit", autoload=True)
        self.assertEqual(marks, 3)
        # The same script without deepum-run: its own three marks.
        _, _, marks = self.run_script("explicit", autoload=False)
        self.assertEqual(marks, 3)


FAKE_TORCH = textwrap.dedent("""
    # A PyTorch 2.x with a GPU, as far as deepum.enable() and the hook can tell.
    import types

    calls = []


    class CUDAPluggableAllocator:
        def __init__(self, path, alloc_fn, free_fn):
            calls.append(("allocator", path, alloc_fn, free_fn))


    def change_current_allocator(allocator):
        calls.append(("change_current_allocator",))


    hooks = []
    cuda = types.SimpleNamespace(
        is_available=lambda: True, is_initialized=lambda: False,
        memory=types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator,
                                     change_current_allocator=change_current_allocator))
    optim = types.SimpleNamespace(
        optimizer=types.SimpleNamespace(register_optimizer_step_post_hook=hooks.append))
    __version__ = "2.99-fake"
    version = types.SimpleNamespace(cuda="12.8")  # a CUDA build (deepum/_support.py)
""")

PROBE = textwrap.dedent("""
    import torch, deepum
    print(torch.calls)
    print(deepum.enabled(), len(torch.hooks))
    for _ in range(2):
        torch.hooks[0](None, (), {})  # two optimizer steps: libdeepum's deepum_step, no GPU
    print("stepped")
""")


class AutoloadWithPyTorch2(unittest.TestCase):
    """The start-up hook against a stand-in PyTorch 2.x that reports a GPU, with the real libdeepum."""

    def test_allocator_installed_and_optimizer_hook_registered(self):
        import deepum
        try:
            library = str(deepum.library_path())
        except FileNotFoundError as e:
            self.skipTest(f"libdeepum is not built: {e}")
        from deepum import run
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "torch"))
            with open(os.path.join(tmp, "torch", "__init__.py"), "w") as f:
                f.write(FAKE_TORCH)
            env = run.build_env(run.parse(["--", "python3"]), dict(os.environ))
            env["PYTHONPATH"] += os.pathsep + tmp
            env["DEEPUM_LIBRARY"] = library
            env.pop("DEEPUM_PLAN", None)
            r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                               text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], str([("allocator", library, "deepum_malloc", "deepum_free"),
                                        ("change_current_allocator",)]))
        self.assertEqual(lines[1], "True 1")
        self.assertEqual(lines[2], "stepped")


if __name__ == "__main__":
    unittest.main()
