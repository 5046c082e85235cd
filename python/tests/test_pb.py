"""deepum_trace.pb: the profile schema's Python module comes from the build, never from
protoc at run time."""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PYTHON_DIR))

from deepum_trace import pb  # noqa: E402


class Lookup(unittest.TestCase):
    def test_explicit_directory_is_the_only_place(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(FileNotFoundError) as ctx:
                pb.find(tmp, env={})
            self.assertIn(os.path.join(tmp, "profile_pb2.py"), str(ctx.exception))
            Path(tmp, "profile_pb2.py").write_text("")
            self.assertEqual(pb.find(tmp, env={}), os.path.join(tmp, "profile_pb2.py"))

    def test_the_package_then_the_build_tree_named_by_the_environment(self):
        with tempfile.TemporaryDirectory() as tmp:
            places = pb.candidates(env={"DEEPUM_BINARY_DIR": tmp})
            self.assertEqual(places[0], os.path.join(pb.PACKAGE_DIR, "profile_pb2.py"))
            self.assertEqual(places[1],
                             os.path.join(tmp, "python", "deepum_trace", "profile_pb2.py"))
            self.assertEqual(places[2], os.path.join(pb.REPO_ROOT, "build", "python",
                                                     "deepum_trace", "profile_pb2.py"))
            if os.path.isfile(places[0]):
                self.skipTest("an installed package: its own module wins")
            generated = Path(places[1])
            generated.parent.mkdir(parents=True)
            generated.write_text("")
            self.assertEqual(pb.find(env={"DEEPUM_BINARY_DIR": tmp}), str(generated))

    def test_not_found_says_how_to_get_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(FileNotFoundError, "make.*pip install"):
                pb.find(os.path.join(tmp, "nowhere"))


class Generated(unittest.TestCase):
    def test_loads_without_protoc_and_matches_the_schema(self):
        try:
            pb.find()
        except FileNotFoundError:
            self.skipTest("no build tree or installed module (run through ctest or after make)")
        # No protoc on PATH: the module must come from the build, compiled already.
        probe = ("from deepum_trace import pb; m = pb.load(); "
                 "p = m.Profile(format_version=m.PROFILE_FORMAT_CURRENT); "
                 "print(m.Profile.DESCRIPTOR.full_name, m.Profile.FromString("
                 "p.SerializeToString()).format_version == m.PROFILE_FORMAT_CURRENT)")
        env = dict(os.environ, PATH="/nonexistent")
        r = subprocess.run([sys.executable, "-c", probe], cwd=PYTHON_DIR, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["deepum.v1.Profile", "True"])


if __name__ == "__main__":
    unittest.main()
