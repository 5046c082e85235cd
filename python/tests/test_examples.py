"""The example training scripts run as users write them: no deepum import, --deterministic works."""
import ast
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
EXAMPLES = PYTHON_DIR.parent / "examples"
SCRIPTS = ["resnet50_train.py", "gpt2_train.py"]
sys.path.insert(0, str(PYTHON_DIR))


def imported_modules(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Examples(unittest.TestCase):
    def test_no_deepum_import(self):
        for name in SCRIPTS + ["ddp_train.py"]:
            with self.subTest(name):
                self.assertNotIn("deepum", imported_modules(EXAMPLES / name))

    def test_deterministic_is_an_option(self):
        for name in SCRIPTS:
            with self.subTest(name):
                module = load(EXAMPLES / name)
                self.assertTrue(module.parse_args(["--deterministic"]).deterministic)
                self.assertFalse(module.parse_args([]).deterministic)

    def test_resnet50_deterministic_runs_repeat_under_deepum_run(self):
        # Under deepum-run's start-up hook (deepum warns: no CUDA here), two
        # --deterministic runs end with bit-for-bit equal parameters.
        import torch
        from deepum import run

        env = run.build_env(run.parse(["--", "python3"]), dict(os.environ))
        with tempfile.TemporaryDirectory() as tmp:
            saved = []
            for i in range(2):
                out = os.path.join(tmp, f"run{i}.pt")
                r = subprocess.run(
                    [sys.executable, str(EXAMPLES / "resnet50_train.py"), "--batch", "2", "--steps",
                     "2", "--image-size", "32", "--device", "cpu", "--deterministic", "--save", out],
                    env=env, capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("step 1 loss", r.stdout)
                if not torch.cuda.is_available():
                    self.assertIn("CUDA is not available", r.stderr)
                saved.append(torch.load(out))
            self.assertEqual(saved[0].keys(), saved[1].keys())
            for key in saved[0]:
                self.assertTrue(torch.equal(saved[0][key], saved[1][key]), key)


if __name__ == "__main__":
    unittest.main()
