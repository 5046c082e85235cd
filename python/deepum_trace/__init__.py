"""deepum_trace: derive deepum profiles from real PyTorch training iterations on a CPU.

A training step (forward, backward, optimizer step) of a real model is run under a
TorchDispatchMode that records every ATen operator, the tensor storages it reads and
writes, and every storage's lifetime (capture.py). Sizes are extrapolated linearly in
batch size from two small traces (extrapolate.py), storages are placed like PyTorch's
CUDA caching allocator would place them (placement.py), kernel durations come from a
roofline model of a named GPU (cost.py, devices.py), and the result is written as a
gzip-compressed deepum.v1.Profile (build.py, pb.py).

The package is deliberately not called ``deepum``: that name belongs to the PyTorch
integration.
"""

VERSION = 1

try:
    import torch  # noqa: F401  (every module of the tracer needs it)
except ImportError as _e:  # one clear line instead of a traceback from deep inside
    import sys as _sys

    raise SystemExit(f"deepum-trace: PyTorch cannot be imported by {_sys.executable} ({_e}); "
                     "run it with /usr/bin/python3 and Debian's python3-torch") from None
