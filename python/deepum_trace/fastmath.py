"""Run an ATen operator, computing float32 GEMMs through oneDNN instead of the system BLAS.

Debian's python3-torch links the reference BLAS (about 4.5 GFLOP/s on one core here),
which would make tracing a transformer take hours; oneDNN's inner-product primitive,
built into the same torch, reaches about 100 GFLOP/s. Only the CPU arithmetic is
substituted: the operator, its arguments and its result (shape, dtype, a fresh
contiguous tensor, values equal up to rounding) are what the real operator would give,
so the trace is unchanged.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
_linear = torch._C._nn.mkldnn_linear


def _fast(*tensors):
    return all(t.device.type == "cpu" and t.dtype == torch.float32 and t.layout == torch.strided
               and t.numel() > 0 for t in tensors)


def _mm(a, b):
    # mkldnn_linear(x, w) computes x @ w.T with w of shape (n, k).
    return _linear(a.contiguous().to_mkldnn(), b.t().contiguous().to_mkldnn(), None).to_dense()


def _bmm(a, b):
    out = torch.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
    for i in range(a.shape[0]):
        out[i] = _mm(a[i], b[i])
    return out


def run(func, args, kwargs):
    if not torch.backends.mkldnn.is_available() or kwargs.get("out") is not None:
        return func(*args, **kwargs)
    try:
        result = _run_fast(func, args, kwargs)
    except RuntimeError:
        result = None   # oneDNN refused these operands: the real kernel gives the same result
    return func(*args, **kwargs) if result is None else result


def _run_fast(func, args, kwargs):
    if func is _aten.mm.default and _fast(*args):
        return _mm(*args)
    if func is _aten.bmm.default and _fast(*args):
        return _bmm(*args)
    if func is _aten.addmm.default and _fast(*args[:3]):
        bias, a, b = args[:3]
        beta = kwargs.get("beta", args[3] if len(args) > 3 else 1)
        alpha = kwargs.get("alpha", args[4] if len(args) > 4 else 1)
        out = _mm(a, b)
        if alpha != 1:
            out.mul_(alpha)
        if beta != 0:
            out.add_(bias, alpha=beta)
        return out
    return None


class FastMathMode(TorchDispatchMode):
    """Dispatch mode that only reroutes GEMMs through oneDNN (for untraced steps)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return run(func, args, kwargs or {})
