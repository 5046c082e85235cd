"""deepum.stats() over libdeepum's C ABI built on the fake backend (no GPU).

DEEPUM_LIBRARY names libdeepum_fake_capi.so (the same CApi.cpp as
libdeepum.so, over the fake backend); PYTHONPATH holds python/.
"""
import ctypes
import os
import unittest

import deepum


class StatsTest(unittest.TestCase):
    def test_report_of_the_loaded_library(self):
        self.assertIsNone(deepum.stats(), "nothing loaded yet: no report")
        os.environ["DEEPUM_LOG"] = "off"
        os.environ.pop("DEEPUM_PLAN", None)
        # As PyTorch's pluggable allocator does: the library is loaded, not by deepum.
        lib = ctypes.CDLL(os.environ["DEEPUM_LIBRARY"])
        self.assertIsNone(deepum.stats(), "loaded, not started: no report")
        lib.deepum_malloc.restype = ctypes.c_void_p
        lib.deepum_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        lib.deepum_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                    ctypes.c_void_p]
        p = lib.deepum_malloc(4096, 0, None)
        self.assertTrue(p)

        s = deepum.stats()
        self.assertEqual(s["schema"], 1)
        self.assertEqual(s["device"], 0)
        self.assertEqual(s["backend"], "fake")
        self.assertIsNone(s["plan"])
        self.assertFalse(s["active"])
        self.assertTrue(s["why_not"].startswith("no plan"), s["why_not"])
        self.assertEqual(s["memory"]["allocations"], 1)
        self.assertEqual(s["memory"]["bytes_in_use"], 4096)
        for key in ("prefetch", "evict", "discard", "advise"):
            self.assertEqual(s[key], {"calls": 0, "bytes": 0})

        lib.deepum_free(p, 4096, 0, None)
        self.assertEqual(deepum.stats()["memory"]["frees"], 1)
        everything = deepum.stats(-1)
        self.assertEqual(everything["schema"], 1)
        self.assertEqual([d["device"] for d in everything["devices"]], [0])
        self.assertIsNone(deepum.stats(7), "a device the backend does not have")

        # After enable() the module's own handle is used.
        deepum._lib = lib
        try:
            self.assertEqual(deepum.stats()["memory"]["frees"], 1)
            # A library without the report (older libdeepum): no report, no error.
            deepum._lib = ctypes.CDLL("libc.so.6")
            self.assertIsNone(deepum.stats())
        finally:
            deepum._lib = None


if __name__ == "__main__":
    unittest.main()
