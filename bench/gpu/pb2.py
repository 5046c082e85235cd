"""The generated protobuf modules of deepum's formats for the scripts of
bench/gpu: deepum.v1.profile_pb2 and plan_pb2 from the build tree
(DEEPUM_PROFILE_PB2_DIR, else build/python/gen; python/CMakeLists.txt
generates them)."""
import os
import sys
from pathlib import Path


def load(name):
    """The module deepum.v1.NAME (profile_pb2 or plan_pb2)."""
    root = Path(__file__).resolve().parents[2]
    for d in (os.environ.get("DEEPUM_PROFILE_PB2_DIR"), root / "build" / "python" / "gen"):
        if d and (Path(d) / "deepum" / "v1" / f"{name}.py").exists():
            if str(d) not in sys.path:
                sys.path.insert(0, str(d))
            break
    module = __import__(f"deepum.v1.{name}", fromlist=[name])
    return module
