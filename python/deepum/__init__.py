"""deepum's PyTorch integration: libdeepum as PyTorch's CUDA allocator.

    import deepum
    deepum.enable(plan="resnet50.plan.pb")   # before the first CUDA allocation
    for batch in loader:
        ...train...
        deepum.step()                          # marks the end of an iteration

`deepum-run` (python -m deepum.run) does the same for an unmodified script.
Inside a training process deepum degrades to doing nothing rather than
breaking the training: without CUDA, enable() warns and returns False.
"""
from __future__ import annotations

import ctypes
import os
import warnings
from pathlib import Path
from typing import Optional

from deepum import _support

__all__ = ["enable", "step", "enabled", "stats", "library_path", "resolve_plan_path"]

_LIBRARY_NAME = "libdeepum.so"
_lib: Optional[ctypes.CDLL] = None


def library_path() -> Path:
    """Where libdeepum.so is: $DEEPUM_LIBRARY, else the build tree, else the install tree."""
    explicit = os.environ.get("DEEPUM_LIBRARY")
    if explicit:
        return Path(explicit)
    here = Path(__file__).resolve()
    candidates = [
        here.parents[2] / "build" / "executor" / _LIBRARY_NAME,  # source checkout, `make`
        here.parents[4] / "lib" / _LIBRARY_NAME,  # installed: <prefix>/share/deepum/python/deepum
    ]
    for c in candidates:
        if c.exists():
            return c
    raise FileNotFoundError(
        f"{_LIBRARY_NAME} not found (looked at {', '.join(map(str, candidates))}); "
        "build deepum with `make` or set DEEPUM_LIBRARY")


def resolve_plan_path(template: str, env: Optional[dict] = None) -> str:
    """Substitutes {rank} and {local_rank} from torchrun's environment.

    `--plan 'plan.rank{rank}.pb'` gives each rank its own plan.
    """
    env = os.environ if env is None else env
    rank = env.get("RANK", "0")
    local_rank = env.get("LOCAL_RANK", rank)
    try:
        return template.format(rank=rank, local_rank=local_rank)
    except (KeyError, IndexError) as e:
        raise ValueError(f"plan path template {template!r}: unknown field {e}") from None


def enabled() -> bool:
    return _lib is not None


def enable(plan: Optional[str] = None, gpu_memory: Optional[str] = None,
           log: Optional[str] = None) -> bool:
    """Installs libdeepum as PyTorch's CUDA allocator. Returns whether it did.

    Must run before CUDA is initialised. `plan` may contain {rank}; `gpu_memory`
    is the capacity budget ("16GiB"), used to emulate oversubscription.
    """
    global _lib
    if _lib is not None:
        return True
    import torch

    if not torch.cuda.is_available():
        warnings.warn("deepum: CUDA is not available; training runs without deepum")
        return False
    for problem in _support.require(torch):  # raises when this PyTorch or driver cannot work
        warnings.warn(f"deepum: {problem}")
    if torch.cuda.is_initialized():
        raise RuntimeError(
            "deepum.enable() must be called before CUDA is initialised: PyTorch has already "
            "made CUDA allocations with its own allocator (call it at the top of the script, "
            "or use deepum-run)")
    memory = getattr(torch.cuda, "memory", None)
    if memory is None or not hasattr(memory, "CUDAPluggableAllocator"):
        raise RuntimeError(
            f"deepum needs torch.cuda.memory.CUDAPluggableAllocator (PyTorch >= 2.0); "
            f"this is PyTorch {torch.__version__}")
    # The executor reads its configuration from the environment when it loads.
    if plan is not None:
        os.environ["DEEPUM_PLAN"] = resolve_plan_path(plan)
    if gpu_memory is not None:
        os.environ["DEEPUM_GPU_MEMORY"] = gpu_memory
    if log is not None:
        os.environ["DEEPUM_LOG"] = log
    path = str(library_path())
    allocator = memory.CUDAPluggableAllocator(path, "deepum_malloc", "deepum_free")
    memory.change_current_allocator(allocator)
    _lib = ctypes.CDLL(path)
    _lib.deepum_step.restype = None
    _lib.deepum_step.argtypes = []
    return True


def step() -> None:
    """Marks the end of a training iteration (a no-op when deepum is not enabled).

    Under deepum-run and deepum-profile each optimizer step marks one already
    (deepum._autostep); once the script calls step() itself, only its calls do.
    """
    from deepum import _autostep

    if _autostep.explicit_step():
        _mark()


def _mark() -> None:
    """libdeepum's deepum_step: the executor's iteration, the profiler's mark."""
    if _lib is not None:
        _lib.deepum_step()


def stats(device: int = 0) -> Optional[dict]:
    """deepum's report (libdeepum's deepum_stats_json) as a dict, or None.

    The plan and its profile fingerprint, "active" and, when the plan is not
    replayed, "why_not"; launches seen / matched / undecoded, resyncs,
    prefetch / evict / discard / advise calls and bytes, backend errors,
    budget, peak resident bytes (docs/executor.md lists the keys). `device=-1`
    gives every device: {"schema": 1, "devices": [...]}. None when libdeepum is
    not loaded in this process, has not started, or does not know `device`.
    """
    import json

    lib = _lib
    if lib is None:
        try:  # loaded by PyTorch's pluggable allocator or by deepum-run: find it, never load it
            lib = ctypes.CDLL(str(library_path()), mode=os.RTLD_NOLOAD)
        except OSError:
            return None
    try:
        report = lib.deepum_stats_json
    except AttributeError:  # a libdeepum older than the report
        return None
    report.restype = ctypes.c_int
    report.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    size = 4096
    for _ in range(4):  # the counts may grow between the calls
        buf = ctypes.create_string_buffer(size)
        n = report(device, buf, size)
        if n < 0:
            return None
        if n < size:
            return json.loads(buf.raw[:n].decode("utf-8", errors="replace"))
        size = n + 1024
    return None
