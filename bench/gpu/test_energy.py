#!/usr/bin/env python3
"""bench/gpu/energy.py's memory sampling, with NVML replaced by a file the command writes.

    python3 bench/gpu/test_energy.py -v

The command writes the "used bytes" it wants NVML to report into a file, then prints a
step line. The report must hold the used bytes before the command, each step's peak
(a short spike between two step lines included) and the run's peak. Without NVML the
report says memory is not readable and the command's status still comes back.
"""
import json
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import energy  # noqa: E402


class FileNvml:
    """NVML's two readings: energy (none) and used memory (from the file)."""

    def __init__(self, path, before):
        self.path, self.handle, self.why_not = path, None, "a test"
        path.write_text(str(before))

    def read(self):
        return None

    def used_bytes(self):
        return int(self.path.read_text() or 0)


class Memory(unittest.TestCase):
    def test_peaks_per_step_and_over_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            used, out = Path(tmp) / "used", Path(tmp) / "out.json"
            nvml = FileNvml(used, 1000)
            # Step 0 at 5000; between the two step lines a spike to 9000 held 0.2 s
            # (the thread's 5 ms polls see it); step 1 at 3000.
            script = (f"import time; f = open({str(used)!r}, 'w');"
                      "w = lambda v: (f.seek(0), f.truncate(), f.write(str(v)), f.flush());"
                      "w(5000); print('step 0', flush=True); time.sleep(0.1);"
                      "w(9000); time.sleep(0.2); w(3000); print('step 1', flush=True)")
            rc = energy.main([str(out), "--", sys.executable, "-c", script], nvml=nvml)
            self.assertEqual(rc, 0)
            r = json.loads(out.read_text())
        self.assertTrue(r["memory_readable"])
        self.assertEqual(r["used_before_bytes"], 1000)
        self.assertEqual([s["used_peak_bytes"] for s in r["steps"]], [5000, 9000])
        self.assertEqual(r["peak_used_bytes"], 9000)

    def test_without_nvml_the_command_still_runs(self):
        class NoNvml(FileNvml):
            def used_bytes(self):
                return None
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            rc = energy.main([str(out), "--", sys.executable, "-c",
                              "print('step 0'); raise SystemExit(3)"],
                             nvml=NoNvml(Path(tmp) / "u", 0))
            r = json.loads(out.read_text())
        self.assertEqual(rc, 3)
        self.assertFalse(r["memory_readable"])
        self.assertIsNone(r["peak_used_bytes"])
        self.assertIsNone(r["steps"][0]["used_peak_bytes"])


if __name__ == "__main__":
    unittest.main()
