"""deepum's start-up check of the PyTorch, CUDA and driver versions (deepum/_support.py),
fed fake versions: no GPU, no PyTorch build of a given version needed."""
import sys
import types
import unittest
import warnings
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import deepum  # noqa: E402
from deepum import _support  # noqa: E402


def fake_torch(version, cuda, available=True):
    torch = types.SimpleNamespace(__version__=version, version=types.SimpleNamespace(cuda=cuda))
    torch.cuda = types.SimpleNamespace(is_available=lambda: available,
                                       is_initialized=lambda: True)
    return torch


class Check(unittest.TestCase):
    def test_supported_combinations_pass_silently(self):
        for torch_version, cuda, driver in [("2.0.0", "12.1", 13000), ("2.4.1+cu124", "12.4", 13000),
                                            ("2.9.0+cu130", "13.0", 13010),
                                            ("2.6.0a0+git1234", "12.6", 13020)]:
            verdict = _support.check(torch_version, cuda, driver)
            self.assertEqual((verdict.errors, verdict.warnings), ([], []), torch_version)

    def test_torch_older_than_2_0_is_an_error(self):
        verdict = _support.check("1.13.1", "11.7", 13000)
        self.assertEqual(len(verdict.errors), 1)
        self.assertIn("PyTorch 1.13.1 is older than 2.0", verdict.errors[0])
        self.assertIn("CUDAPluggableAllocator", verdict.errors[0])

    def test_cpu_or_rocm_build_is_an_error(self):
        verdict = _support.check("2.4.0+cpu", None, None)
        self.assertEqual(verdict.errors, ["PyTorch 2.4.0+cpu is not built for CUDA"])

    def test_driver_older_than_cuda_13_is_an_error(self):
        verdict = _support.check("2.4.0", "12.4", 12040)
        self.assertEqual(len(verdict.errors), 1)
        self.assertIn("supports CUDA 12.4", verdict.errors[0])
        self.assertIn("CUDA 13.0 or newer", verdict.errors[0])
        # Exactly the oldest supported driver passes.
        self.assertEqual(_support.check("2.4.0", "12.4", 13000).errors, [])

    def test_unknown_driver_is_not_held_against_the_setup(self):
        self.assertEqual(_support.check("2.4.0", "12.4", None).errors, [])

    def test_untested_torch_cuda_is_a_warning(self):
        verdict = _support.check("2.4.0", "11.8", 13000)
        self.assertEqual(verdict.errors, [])
        self.assertEqual(len(verdict.warnings), 1)
        self.assertIn("CUDA 11.8", verdict.warnings[0])

    def test_unreadable_versions_are_warnings(self):
        verdict = _support.check("nightly", "x", 13000)
        self.assertEqual(verdict.errors, [])
        self.assertEqual(len(verdict.warnings), 2)

    def test_every_problem_is_named(self):
        verdict = _support.check("1.12.0", None, 11080)
        self.assertEqual(len(verdict.errors), 3)

    def test_version_parsing(self):
        self.assertEqual(_support.parse_version("2.4.1+cu124"), (2, 4, 1))
        self.assertEqual(_support.parse_version("12.4"), (12, 4))
        self.assertIsNone(_support.parse_version(None))
        self.assertIsNone(_support.parse_version("abc"))
        self.assertEqual(_support.driver_text(12040), "12.4")
        self.assertEqual(_support.driver_text(13010), "13.1")


class Require(unittest.TestCase):
    def test_raises_one_message_with_the_supported_matrix(self):
        with self.assertRaises(RuntimeError) as ctx:
            _support.require(fake_torch("1.13.1", "11.7"), driver_cuda=lambda: 12020)
        message = str(ctx.exception)
        self.assertTrue(message.startswith("unsupported setup: PyTorch 1.13.1 is older"), message)
        self.assertIn("supports CUDA 12.2", message)
        self.assertIn("docs/pytorch.md", message)
        self.assertNotIn("\n", message)

    def test_returns_warnings_when_it_can_run(self):
        self.assertEqual(_support.require(fake_torch("2.4.0", "12.4"), lambda: 13000), [])
        self.assertEqual(len(_support.require(fake_torch("2.4.0", "11.8"), lambda: 13000)), 1)

    def test_driver_query_never_fails(self):
        value = _support.query_driver_cuda()  # no driver on a CPU machine: None
        self.assertTrue(value is None or value >= 1000)


class Enable(unittest.TestCase):
    """deepum.enable() runs the check once CUDA is there, before touching PyTorch."""

    def enable_with(self, torch):
        with mock.patch.dict(sys.modules, {"torch": torch}), \
                mock.patch.object(_support, "query_driver_cuda", lambda: 13000):
            return deepum.enable()

    def test_unsupported_torch_stops_enable_with_the_check_message(self):
        with self.assertRaisesRegex(RuntimeError, "^unsupported setup: PyTorch 1.13.1"):
            self.enable_with(fake_torch("1.13.1", "11.7"))
        self.assertFalse(deepum.enabled())

    def test_supported_torch_gets_past_the_check(self):
        # The fake says CUDA is initialised already: the next check's error, not the matrix's.
        with self.assertRaisesRegex(RuntimeError, "before CUDA is initialised"):
            self.enable_with(fake_torch("2.4.0", "12.4"))

    def test_untested_combination_warns_and_goes_on(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with self.assertRaisesRegex(RuntimeError, "before CUDA is initialised"):
                self.enable_with(fake_torch("2.4.0", "11.8"))
        self.assertTrue(any("CUDA 11.8" in str(w.message) for w in caught))

    def test_without_cuda_there_is_nothing_to_check(self):
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            self.assertFalse(self.enable_with(fake_torch("1.13.1", None, available=False)))


if __name__ == "__main__":
    unittest.main()
