"""The CUDA, driver and PyTorch versions deepum supports, checked when it is enabled.

libdeepum.so is built against CUDA 13 and carries its own CUDA runtime (linked statically,
hidden), so PyTorch's CUDA runtime may be another version: what must hold is that the
driver runs CUDA 13 programs and that PyTorch has the pluggable-allocator interface. The
table is docs/pytorch.md's "Supported versions"; keep the two together.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

# torch.cuda.memory.CUDAPluggableAllocator and the global optimizer step hook: PyTorch 2.0.
MIN_TORCH = (2, 0)
# cuDriverGetVersion() of the oldest driver that runs CUDA 13.0 programs (Linux r580).
MIN_DRIVER_CUDA = 13000
# PyTorch builds for these CUDA majors share a process with libdeepum's CUDA 13 runtime
# through the driver's primary context; others are not known to work.
TORCH_CUDA_MAJORS = (12, 13)

SUPPORTED = ("supported: PyTorch >= 2.0 built for CUDA 12 or 13, and an NVIDIA driver "
             "for CUDA 13.0 or newer (r580 or later); see docs/pytorch.md")


@dataclass
class Verdict:
    """What is wrong (errors: deepum cannot run) or unknown (warnings: it may)."""
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


def parse_version(text: Optional[str]) -> Optional[Tuple[int, ...]]:
    """'2.4.1+cu124' -> (2, 4, 1); '2.6.0a0+git1234' -> (2, 6, 0); None when unreadable."""
    if not text:
        return None
    m = re.match(r"\s*(\d+(?:\.\d+)*)", text)
    if m is None:
        return None
    return tuple(int(part) for part in m.group(1).split("."))


def driver_text(version: int) -> str:
    """cuDriverGetVersion's 13000 -> '13.0'."""
    return f"{version // 1000}.{version % 1000 // 10}"


def check(torch_version: Optional[str], torch_cuda: Optional[str],
          driver_cuda: Optional[int]) -> Verdict:
    """Judges one combination. torch_cuda is torch.version.cuda (None for a CPU or ROCm
    build); driver_cuda is cuDriverGetVersion()'s value, None when it could not be read."""
    verdict = Verdict()
    torch_parsed = parse_version(torch_version)
    if torch_parsed is None:
        verdict.warnings.append(f"PyTorch version {torch_version!r} is not understood")
    elif torch_parsed[:2] < MIN_TORCH:
        verdict.errors.append(
            f"PyTorch {torch_version} is older than 2.0 (deepum needs "
            "torch.cuda.memory.CUDAPluggableAllocator)")
    cuda_parsed = parse_version(torch_cuda)
    if torch_cuda is None:
        verdict.errors.append(f"PyTorch {torch_version} is not built for CUDA")
    elif cuda_parsed is None:
        verdict.warnings.append(f"PyTorch's CUDA version {torch_cuda!r} is not understood")
    elif cuda_parsed[0] not in TORCH_CUDA_MAJORS:
        verdict.warnings.append(
            f"PyTorch is built for CUDA {torch_cuda}, which deepum is not known to work with")
    if driver_cuda is not None and driver_cuda < MIN_DRIVER_CUDA:
        verdict.errors.append(
            f"the NVIDIA driver supports CUDA {driver_text(driver_cuda)}; libdeepum needs a "
            f"driver for CUDA {driver_text(MIN_DRIVER_CUDA)} or newer")
    return verdict


def query_driver_cuda() -> Optional[int]:
    """The driver's CUDA version (cuDriverGetVersion; needs no context, so it leaves
    PyTorch's CUDA state alone), or None without a loadable driver."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
        return version.value
    except (OSError, AttributeError):
        return None


def require(torch, driver_cuda=query_driver_cuda) -> List[str]:
    """Raises RuntimeError naming every problem when deepum cannot run with this PyTorch
    and driver; returns the warnings (combinations not known to work) otherwise."""
    version = getattr(torch, "__version__", None)
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    verdict = check(version, cuda, driver_cuda())
    if verdict.errors:
        raise RuntimeError(f"unsupported setup: {'; '.join(verdict.errors)} ({SUPPORTED})")
    return verdict.warnings
