#!/usr/bin/env python3
"""The profile analysis behind docs/when-to-use.md's modelled columns, on a hand-made
iteration whose answers are worked out below."""
import gzip
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import alternatives  # noqa: E402
from alternatives import pb  # noqa: E402

READ, WRITE = 1, 2
PARAMETER, GRADIENT, OPTIMIZER_STATE, ACTIVATION = 1, 2, 3, 4


def tiny_profile(path):
    """Five kernels of 100 ns, one iteration:

        k0 reads P, writes A      (forward)
        k1 reads A, writes B      (forward)
        k2 reads B, writes C, G   (the turn: live activations peak here, A + B + C = 550)
        k3 reads A and P, writes G
        k4 reads P, G, writes O   (optimizer step)

    Live: P 1000 and O 2000 all iteration, A 400 over k0..k3, B 100 over k1..k2, C 50 at k2,
    G 1000 from k2 on."""
    m = pb.load()
    p = m.Profile(format_version=1, producer="test_alternatives")
    p.device.name = "tiny"
    p.workload.model = "tiny"
    allocs = {  # id: (role, bytes, alloc ns, free ns or None)
        1: (PARAMETER, 1000, 0, None), 2: (OPTIMIZER_STATE, 2000, 0, None),
        3: (ACTIVATION, 400, 0, 400), 4: (ACTIVATION, 100, 100, 300),
        5: (ACTIVATION, 50, 200, 300), 6: (GRADIENT, 1000, 200, None)}
    for aid, (role, size, at, free) in allocs.items():
        a = p.allocations.add(id=aid, size_bytes=size, address=aid << 32, alloc_time_ns=at,
                              role=role)
        if free is not None:
            a.freed, a.free_time_ns = True, free
    uses = [[(1, READ), (3, WRITE)], [(3, READ), (4, WRITE)], [(4, READ), (5, WRITE), (6, WRITE)],
            [(3, READ), (1, READ), (6, WRITE)], [(1, READ), (6, READ), (2, WRITE)]]
    for i, us in enumerate(uses):
        k = p.kernels.add(name=f"k{i}", start_ns=100 * i, end_ns=100 * i + 100)
        for aid, mode in us:
            k.tensors.add(allocation_id=aid, offset=0, bytes=allocs[aid][1], mode=mode)
    p.iterations.add(index=0, first_kernel=0, kernel_count=5, start_ns=0, end_ns=500)
    with gzip.open(path, "wb") as f:
        f.write(p.SerializeToString())


class AnalysisTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tiny.profile.pb.gz")
            tiny_profile(path)
            cls.a = alternatives.Analysis(path, {"name": "tiny"})

    def test_turn_and_forward(self):
        self.assertEqual(self.a.turn, 2)
        self.assertAlmostEqual(self.a.forward_us, 0.2)
        self.assertAlmostEqual(self.a.ideal_us, 0.5)
        self.assertEqual(self.a.activation_peak, 550)

    def test_peaks(self):
        self.assertEqual(self.a.peak_live, 4550)            # at k2
        self.assertEqual(self.a.non_activation_peak, 4000)  # P + O + G
        self.assertEqual(self.a.zero_need, 1550)            # without O and G, at k2
        self.assertEqual(self.a.fsdp_need, 550)             # without P too

    def test_save_on_cpu(self):
        # Saved: A (k0, k1 | k3), B (k1 | k2), P (k0 | k3, k4); C is not used before the turn.
        self.assertEqual(self.a.saved_bytes, 400 + 100 + 1000)
        # A's GPU memory is free at k2 (between its last forward and first backward use):
        # 4550 - 400 there, so the peak moves to k3 (P + O + A + G).
        self.assertEqual(self.a.save_on_cpu_need, 4400)

    def test_optimizer(self):
        self.assertAlmostEqual(self.a.optimizer_us, 0.1)
        self.assertEqual(self.a.parameter_bytes, 1000)
        self.assertEqual(self.a.parameter_count, 250)  # fp32, no parameter_count recorded


if __name__ == "__main__":
    unittest.main()
