import json
import os
import tempfile
import unittest

import torch

from deepum_trace import cost, devices
from deepum_trace.build import block_accesses
from deepum_trace.capture import READ, READ_WRITE, WRITE, merge_ranges

MIB = 1024 * 1024
KIB = 1024


class FlopsTest(unittest.TestCase):
    def conv(self, shapes, transposed=False, groups=1, bias=True):
        """FLOPs of aten::convolution as the tracer records it: operands, then the result."""
        x, w, *rest = shapes
        args = (torch.empty(x), torch.empty(w), torch.empty(w[0]) if bias else None,
                [1, 1], [0, 0], [1, 1], transposed, [0, 0], groups)
        params = cost.flop_params("aten::convolution", args)
        return cost.op_flops("aten::convolution", shapes, params)

    def test_convolution(self):
        # 288 outputs x 27 MACs x 2, plus one add per output for the bias.
        self.assertEqual(self.conv([(2, 3, 8, 8), (4, 3, 3, 3), (4,), (2, 4, 6, 6)]),
                         2 * 288 * 27 + 288)
        self.assertEqual(self.conv([(2, 3, 8, 8), (4, 3, 3, 3), (2, 4, 6, 6)], bias=False),
                         2 * 288 * 27)

    def test_grouped_and_transposed_convolution(self):
        self.assertEqual(self.conv([(1, 4, 5, 5), (8, 2, 3, 3), (1, 8, 5, 5)], groups=2,
                                   bias=False), 2 * 200 * 18)
        # Transposed: every input element is scattered over weight[1:] = 2 x 3 x 3 outputs.
        self.assertEqual(self.conv([(1, 4, 3, 3), (4, 2, 3, 3), (1, 2, 5, 5)], transposed=True,
                                   bias=False), 2 * 36 * 18)

    def test_convolution_backward_counts_requested_gradients(self):
        shapes = [(2, 4, 6, 6), (2, 3, 8, 8), (4, 3, 3, 3)]
        fwd = 2 * 288 * 27

        def flops(mask):
            args = (None,) * 7 + (False, [0, 0], 1, mask)
            params = cost.flop_params("aten::convolution_backward", args)
            return cost.op_flops("aten::convolution_backward", shapes, params)
        self.assertEqual(flops([True, True, True]), 2 * fwd + 288)
        self.assertEqual(flops([False, True, False]), fwd)
        self.assertEqual(flops([True, False, False]), fwd)

    def test_gemms(self):
        self.assertEqual(cost.op_flops("aten::mm", [(5, 7), (7, 3), (5, 3)], ()), 2 * 5 * 3 * 7)
        self.assertEqual(cost.op_flops("aten::addmm", [(3,), (5, 7), (7, 3), (5, 3)], ()),
                         2 * 5 * 3 * 7 + 15)
        self.assertEqual(cost.op_flops("aten::bmm", [(4, 5, 7), (4, 7, 3), (4, 5, 3)], ()),
                         2 * 4 * 5 * 3 * 7)
        self.assertEqual(cost.op_flops("aten::baddbmm",
                                       [(4, 5, 3), (4, 5, 7), (4, 7, 3), (4, 5, 3)], ()),
                         2 * 4 * 5 * 3 * 7 + 60)

    def test_elementwise_counts_largest_operand(self):
        self.assertEqual(cost.op_flops("aten::add", [(10, 4), (4,), (10, 4)], ()), 40)

    def test_launch_config_is_stable_and_shape_dependent(self):
        a = cost.launch_config([("float32", (8, 4))], 32, False)
        self.assertEqual(a, cost.launch_config([("float32", (8, 4))], 32, False))
        self.assertEqual(a[0][0], 1)
        self.assertEqual(a[1], (256, 1, 1))
        self.assertNotEqual(a, cost.launch_config([("float32", (4, 8))], 32, False))
        self.assertEqual(cost.launch_config([], 257, False)[0][0], 2)


class RooflineTest(unittest.TestCase):
    def test_v100(self):
        v100 = devices.load_device_model("v100-pcie-16gb")
        self.assertEqual(v100.compute_capability, 70)
        self.assertEqual(v100.kernel_ns(0, 0, False), 3000)                 # launch floor
        self.assertEqual(v100.kernel_ns(10.5e12, 0, True), 10**9)           # 14T x 0.75
        self.assertEqual(v100.kernel_ns(0, 720e9, False), 10**9)            # 900G x 0.8
        self.assertEqual(v100.kernel_ns(10.5e12, 1440e9, True), 2 * 10**9)  # the slower wins

    def test_unknown_device_model(self):
        with self.assertRaisesRegex(ValueError, "h100-pcie"):
            devices.load_device_model("no-such-gpu")

    def test_device_file_overrides_builtin_fields(self):
        # As deepum-plan and deepum-sim read --device-file: fields over the built-in model.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "lab.json")
            with open(path, "w") as f:
                json.dump({"models": [{"name": "h100-pcie", "kernel_min_us": 7.0},
                                      {"name": "lab-gpu", "link": "pcie4x16",
                                       "link_bytes_per_second": 1e9}]}, f)
            h100 = devices.load_device_model("h100-pcie")
            lab = devices.load_device_model("h100-pcie", path)
            self.assertEqual(lab.kernel_min_us, 7.0)
            self.assertNotEqual(h100.kernel_min_us, 7.0)
            self.assertEqual(lab.dram_bytes_per_second, h100.dram_bytes_per_second)
            with self.assertRaisesRegex(ValueError, "no device model named 'tpu' here or built in"):
                devices.load_device_model("tpu", path)
            with self.assertRaisesRegex(ValueError, "does not set memory_bytes"):
                devices.load_device_model("lab-gpu", path)

    def test_device_file_refuses_what_the_tools_refuse(self):
        # The messages deepum-plan and deepum-sim give (tests/tools/device-options.sh).
        cases = [({"link_bytes_per_sec": 1e9}, "unknown field 'link_bytes_per_sec'"),
                 ({"kernel_min_us": -1}, "'kernel_min_us' must be a non-negative number"),
                 ({"kernel_min_us": "7"}, "'kernel_min_us' must be a non-negative number"),
                 ({"kernel_min_us": float("nan")}, "'kernel_min_us' must be a finite number, not nan"),
                 ({"link_bytes_per_second": float("inf")},
                  "'link_bytes_per_second' must be a finite number, not inf"),
                 ({"eviction_copies_clean": 1}, "'eviction_copies_clean' must be true or false"),
                 ({"populates_hold_copy_engine": 0},
                  "'populates_hold_copy_engine' must be true or false")]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "typo.json")
            for fields, message in cases:
                with open(path, "w") as f:
                    json.dump({"models": [dict(name="h100-pcie", **fields)]}, f)
                with self.assertRaisesRegex(ValueError, f"^{path}: model 'h100-pcie': {message}$"):
                    devices.load_device_model("h100-pcie", path)
            # Every field a built-in model has is accepted, with its own value.
            fields = devices._models(devices.DEFAULT_DEVICE_FILE)["h100-pcie"]
            with open(path, "w") as f:
                json.dump({"models": [fields]}, f)
            self.assertEqual(devices.load_device_model("h100-pcie", path),
                             devices.load_device_model("h100-pcie"))


class AccessMergingTest(unittest.TestCase):
    def test_merge_ranges(self):
        self.assertEqual(merge_ranges([(0, 8, READ), (4, 12, WRITE)]),
                         [(0, 4, READ), (4, 8, READ_WRITE), (8, 12, WRITE)])
        self.assertEqual(merge_ranges([(0, 8, READ), (8, 16, READ)]), [(0, 16, READ)])

    def test_block_accesses(self):
        base = 5 * 2 * MIB
        self.assertEqual(block_accesses([(base, 100, READ)]), [(5, 1, READ)])
        # A whole 64 KiB page overwritten: its old contents are dead.
        self.assertEqual(block_accesses([(base + 64 * KIB, 64 * KIB, WRITE)]), [(5, 2, WRITE)])
        # Part of a page written: the rest of the page may still matter.
        self.assertEqual(block_accesses([(base, 100, WRITE)]), [(5, 1, READ_WRITE)])
        # Two outputs that together fill the page.
        self.assertEqual(block_accesses([(base, 32 * KIB, WRITE),
                                         (base + 32 * KIB, 32 * KIB, WRITE)]), [(5, 1, WRITE)])
        # Crossing a block boundary: last page of block 4, first of block 5.
        self.assertEqual(block_accesses([(base - 64 * KIB, 128 * KIB, WRITE)]),
                         [(4, 1 << 31, WRITE), (5, 1, WRITE)])
        # Read and written pages of one block merge into READ_WRITE, ascending by block.
        self.assertEqual(block_accesses([(base + 2 * MIB, 4, READ), (base, 2 * MIB, WRITE),
                                         (base + 64 * KIB, 10, READ)]),
                         [(5, 0xFFFFFFFF, READ_WRITE), (6, 1, READ)])


if __name__ == "__main__":
    unittest.main()
