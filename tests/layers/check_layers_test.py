#!/usr/bin/env python3
"""The layering check (cmake/CheckLayers.py) fails on planted upward and
sideways includes, names each by file and line, and passes a clean tree.

    check_layers_test.py SOURCE_DIR
"""

import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = None


def plant(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def check(root):
    script = os.path.join(SOURCE_DIR, "cmake", "CheckLayers.py")
    return subprocess.run([sys.executable, script, "--root", root],
                          capture_output=True, text=True)


CLEAN = {
    "base/lib/ByteSize.cpp": '#include "deepum/base/ByteSize.h"\n',
    "proto/lib/Units.cpp": '#include "deepum/format/Units.h"\n#include "deepum/base/ByteSize.h"\n',
    "cupti/lib/Subscriber.cpp": '#include "deepum/cupti/Subscriber.h"\n#include "deepum/base/Log.h"\n',
    "planner/lib/Plan.cpp": '#include "deepum/planner/Planner.h"\n#include "deepum/v1/plan.pb.h"\n',
    "executor/lib/Sim.cpp": '#include "deepum/sim/Engine.h"\n#include <deepum/deepum.h>\n',
    "tools/deepum-plan.cpp": '#include "deepum/planner/Planner.h"\n#include "deepum/executor/X.h"\n',
    "tests/AnyTest.cpp": '#include "deepum/tools/Cli.h"\n#include "deepum/base/Hash.h"\n',
}


class CheckLayersTest(unittest.TestCase):
    def test_clean_tree_passes(self):
        with tempfile.TemporaryDirectory() as root:
            plant(root, CLEAN)
            r = check(root)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")

    def test_upward_include_fails_naming_file_and_line(self):
        with tempfile.TemporaryDirectory() as root:
            plant(root, CLEAN)
            plant(root, {"proto/lib/Format.cpp":
                         '// the format library\n#include "deepum/base/Hash.h"\n'
                         '#include "deepum/executor/Log.h"\n'})
            r = check(root)
            self.assertEqual(r.returncode, 1)
            lines = [l for l in r.stderr.splitlines() if l.startswith("proto/")]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("proto/lib/Format.cpp:3: format (layer 1) "
                                                "includes executor (layer 3)"), lines[0])

    def test_sideways_include_fails(self):
        with tempfile.TemporaryDirectory() as root:
            plant(root, CLEAN)
            plant(root, {"simulator/include/deepum/sim/Engine.h":
                         '#include <deepum/planner/Trace.h>\n'})
            r = check(root)
            self.assertEqual(r.returncode, 1)
            self.assertIn("simulator/include/deepum/sim/Engine.h:1: simulator (layer 2) includes "
                          "planner (layer 2), which is beside it", r.stderr)

    def test_profiler_including_executor_fails(self):
        # What the profiler did before the CUPTI subscriber became cupti/.
        with tempfile.TemporaryDirectory() as root:
            plant(root, CLEAN)
            plant(root, {"profiler/cuda/SharedCuptiPort.cpp":
                         '#include "deepum/executor/cuda/Cupti.h"\n'})
            r = check(root)
            self.assertEqual(r.returncode, 1)
            self.assertIn("profiler/cuda/SharedCuptiPort.cpp:1: profiler (layer 2) includes "
                          "executor (layer 3), which is above it", r.stderr)

    def test_unknown_component_fails(self):
        with tempfile.TemporaryDirectory() as root:
            plant(root, {"base/lib/X.cpp": '#include "deepum/nowhere/X.h"\n'})
            r = check(root)
            self.assertEqual(r.returncode, 1)
            self.assertIn("base/lib/X.cpp:1: includes deepum/nowhere/", r.stderr)

    def test_source_tree_passes(self):
        r = check(SOURCE_DIR)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    SOURCE_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
