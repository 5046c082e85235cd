"""deepum's PyTorch integration: libdeepum as PyTorch's CUDA allocator.

    import deepum
    deepum.enable(plan="resnet50.plan.pb")   # before the first CUDA allocation
    for batch in loader:
        ...train...
        deepum.step()                          # marks the end of an iteration

`deepum-run` (python -m deepum.run) does the same for an unmodified script.
Inside a training process deepum degrades to doing nothing rather than
breaking the training: without CUDA, enable() warns and returns False. When
the user asked for deepum explicitly (enable(strict=True); deepum-run with
--plan or --strict), every such failure raises DeepumError instead.
"""
from __future__ import annotations

import ctypes
import os
import re
import warnings
from pathlib import Path
from typing import Optional

from deepum import _support

__all__ = ["enable", "step", "enabled", "stats", "library_path", "resolve_plan_path",
           "resolve_path", "DeepumError", "LOG_LEVELS", "check_size", "check_log"]

# DEEPUM_LOG's levels (executor/lib/Log.cpp); an optional ":path" follows.
LOG_LEVELS = ("off", "none", "0", "error", "warn", "warning", "info", "1", "debug", "2")
_SIZE = re.compile(r"^\s*(\d+(\.\d*)?|\.\d+)\s*(b|k|kib|m|mib|g|gib|t|tib|kb|mb|gb|tb)?\s*$",
                   re.IGNORECASE)


class DeepumError(Exception):
    """deepum cannot do what the user explicitly asked of it."""

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


def resolve_path(template: str, env: Optional[dict] = None, what: str = "path") -> str:
    """Substitutes {rank} and {local_rank} from torchrun's environment (0 outside it).

    `--plan 'plan.rank{rank}.pb'` gives each rank its own plan; `--stats` and
    deepum-profile's `-o` take the same fields.
    """
    env = os.environ if env is None else env
    rank = env.get("RANK", "0")
    local_rank = env.get("LOCAL_RANK", rank)
    try:
        return template.format(rank=rank, local_rank=local_rank)
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"{what} template {template!r}: unknown field {e} "
                         "(known: {rank}, {local_rank})") from None


def resolve_plan_path(template: str, env: Optional[dict] = None) -> str:
    """resolve_path for a plan: `plan.rank{rank}.pb` under torchrun."""
    return resolve_path(template, env, "plan path")


def check_size(text: str) -> None:
    """Raises DeepumError unless `text` is a size libdeepum reads: "8GiB", or per
    device "0=8GiB,1=4GiB" (DEEPUM_GPU_MEMORY's syntax)."""
    parts = [text]
    if "=" in text:
        parts = []
        for part in filter(None, text.split(",")):
            device, _, size = part.partition("=")
            if not device.strip().isdigit():
                raise DeepumError(f"--gpu-memory {text!r}: expected DEVICE=SIZE, got {part!r}")
            parts.append(size)
    for part in parts:
        if not _SIZE.match(part):
            raise DeepumError(f"--gpu-memory {text!r}: {part!r} is not a size (e.g. 16GiB)")


def check_log(text: str) -> None:
    """Raises DeepumError unless `text` is a DEEPUM_LOG value: LEVEL or LEVEL:PATH."""
    level = text.split(":", 1)[0]
    if level and level not in LOG_LEVELS:  # empty: the default
        raise DeepumError(f"DEEPUM_LOG {text!r}: unknown level {level!r} "
                          "(expected off, error, warn, info or debug, optionally :PATH)")


def _check_plan(path: str) -> None:
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as e:
        raise DeepumError(f"plan {path}: {e.strerror or e}") from None


def _check_torch(torch) -> None:
    """The PyTorch here can take deepum as its allocator (PyTorch >= 2.0)."""
    try:  # the package's own version policy, where there is one
        from deepum import _support  # noqa: PLC0415
    except ImportError:
        _support = None
    check_environment = getattr(_support, "check_environment", None)
    if check_environment is not None:
        try:
            check_environment()
        except Exception as e:  # noqa: BLE001 - any refusal is the same error here
            raise DeepumError(str(e)) from None
    memory = getattr(torch.cuda, "memory", None)
    if memory is None or not hasattr(memory, "CUDAPluggableAllocator"):
        raise DeepumError(
            f"deepum needs torch.cuda.memory.CUDAPluggableAllocator (PyTorch >= 2.0); "
            f"this is PyTorch {torch.__version__}")


def enabled() -> bool:
    return _lib is not None


def enable(plan: Optional[str] = None, gpu_memory: Optional[str] = None,
           log: Optional[str] = None, strict: bool = False) -> bool:
    """Installs libdeepum as PyTorch's CUDA allocator. Returns whether it did.

    Must run before CUDA is initialised. `plan` may contain {rank}; `gpu_memory`
    is the capacity budget ("16GiB"), used to emulate oversubscription.

    Without `strict`, no CUDA means a warning and False. With `strict` (the
    user asked for deepum) a plan that cannot be read, a bad `gpu_memory` or
    `log`, a PyTorch without pluggable allocators, or no CUDA raise DeepumError,
    in that order.
    """
    global _lib
    if _lib is not None:
        return True
    resolved = resolve_plan_path(plan) if plan is not None else None
    if strict:
        if resolved is not None:
            _check_plan(resolved)
        if gpu_memory is not None:
            check_size(gpu_memory)
        log_setting = log if log is not None else os.environ.get("DEEPUM_LOG")
        if log_setting:
            check_log(log_setting)
    import torch

    if strict:
        _check_torch(torch)
    if not torch.cuda.is_available():
        if strict:
            raise DeepumError("CUDA is not available (torch.cuda.is_available() is False)")
        warnings.warn("deepum: CUDA is not available; training runs without deepum")
        return False
    for problem in _support.require(torch):  # raises when this PyTorch or driver cannot work
        warnings.warn(f"deepum: {problem}")
    if torch.cuda.is_initialized():
        raise RuntimeError(
            "deepum.enable() must be called before CUDA is initialised: PyTorch has already "
            "made CUDA allocations with its own allocator (call it at the top of the script, "
            "or use deepum-run)")
    try:
        _check_torch(torch)
    except DeepumError as e:
        raise RuntimeError(str(e)) from None
    memory = torch.cuda.memory
    # The executor reads its configuration from the environment when it loads.
    if resolved is not None:
        os.environ["DEEPUM_PLAN"] = resolved
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
