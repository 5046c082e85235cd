"""Load the deepum.v1 profile schema as a Python module without shipping generated code.

The .proto file in the repository is the contract; we compile it with protoc on demand
into a cache directory and import the result under a private module name, so that no
stale generated copy can drift from the schema and no package called ``deepum`` is
created (that name is reserved for the PyTorch integration).
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_PROTO_DIR = os.path.join(REPO_ROOT, "proto")
PROTO_REL = os.path.join("deepum", "v1", "profile.proto")
MODULE_NAME = "deepum_profile_pb2"

_loaded = None


def default_cache_dir():
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"deepum_trace_proto_{uid}")


def load(proto_dir=None, cache_dir=None):
    """Return the generated profile_pb2 module (compiled and imported once per process)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    proto_dir = os.path.abspath(proto_dir or DEFAULT_PROTO_DIR)
    cache_dir = os.path.abspath(cache_dir or default_cache_dir())
    source = os.path.join(proto_dir, PROTO_REL)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"profile schema not found: {source}")
    generated = os.path.join(cache_dir, "deepum", "v1", "profile_pb2.py")
    if not os.path.isfile(generated) or os.path.getmtime(generated) < os.path.getmtime(source):
        _generate(proto_dir, cache_dir)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, generated)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[MODULE_NAME] = module
    _loaded = module
    return module


def _generate(proto_dir, cache_dir):
    protoc = shutil.which("protoc")
    if protoc is None:
        raise RuntimeError("protoc not found on PATH; it is needed to compile profile.proto")
    os.makedirs(cache_dir, exist_ok=True)
    # Compile into a private directory and move the result into place atomically, so
    # that two tracers started together never import a half-written module.
    staging = tempfile.mkdtemp(prefix="gen-", dir=cache_dir)
    try:
        subprocess.run([protoc, f"--python_out={staging}", "-I", proto_dir, PROTO_REL],
                       check=True, capture_output=True, text=True)
        target_dir = os.path.join(cache_dir, "deepum", "v1")
        os.makedirs(target_dir, exist_ok=True)
        os.replace(os.path.join(staging, "deepum", "v1", "profile_pb2.py"),
                   os.path.join(target_dir, "profile_pb2.py"))
    except subprocess.CalledProcessError as err:
        raise RuntimeError(f"protoc failed on {PROTO_REL}: {err.stderr.strip()}") from err
    finally:
        shutil.rmtree(staging, ignore_errors=True)
