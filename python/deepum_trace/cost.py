"""Per-operator cost inputs for the roofline: FLOPs, and which peak (matmul or vector) applies.

FLOPs count a multiply-add as 2. Matmul-like operators (convolutions and GEMMs) get exact
formulas; everything else is costed at one FLOP per element of its largest operand, which
is close enough for memory-bound elementwise, normalisation and reduction kernels whose
duration the DRAM term decides anyway.
"""

import math
import zlib

MATMUL_OPS = frozenset({
    "aten::convolution", "aten::convolution_backward", "aten::mm", "aten::addmm",
    "aten::bmm", "aten::baddbmm",
})

BLOCK_THREADS = 256
MAX_GRID_X = 2**31 - 1


def _numel(shape):
    return math.prod(shape)


def conv_forward_flops(input_shape, weight_shape, output_shape, transposed):
    """2 x (MACs) of a convolution. Each output element of an ordinary convolution sums over
    weight[1:] (input channels per group x kernel window); a transposed convolution
    scatters every input element over weight[1:] (output channels per group x window)."""
    per_element = _numel(weight_shape[1:])
    return 2 * per_element * _numel(input_shape if transposed else output_shape)


def flop_params(name, args):
    """The non-tensor arguments op_flops needs, taken from the operator's arguments."""
    if name == "aten::convolution":
        return (bool(args[6]), args[2] is not None)       # transposed, has bias
    if name == "aten::convolution_backward":
        return (bool(args[7]), tuple(bool(m) for m in args[10]))   # transposed, output mask
    return ()


def op_flops(name, shapes, params):
    """FLOPs of one operator from the shapes of its tensor operands (schema order, then its
    fresh results) and flop_params(). Computed from shapes, not measured per trace, so
    that it stays exact when shapes are extrapolated."""
    if name == "aten::convolution":
        transposed, has_bias = params
        out = shapes[-1]
        flops = conv_forward_flops(shapes[0], shapes[1], out, transposed)
        return flops + (_numel(out) if has_bias else 0)
    if name == "aten::convolution_backward":
        transposed, mask = params
        grad_out, inp, weight = shapes[:3]
        fwd = conv_forward_flops(inp, weight, grad_out, transposed)
        # grad_input and grad_weight each cost one forward convolution; grad_bias sums grad_out.
        return fwd * mask[0] + fwd * mask[1] + _numel(grad_out) * mask[2]
    if name in ("aten::mm", "aten::addmm"):
        (m, k), (_, n) = shapes[1:3] if name == "aten::addmm" else shapes[:2]
        return 2 * m * n * k + (m * n if name == "aten::addmm" else 0)
    if name in ("aten::bmm", "aten::baddbmm"):
        (b, m, k), (_, _, n) = shapes[1:3] if name == "aten::baddbmm" else shapes[:2]
        return 2 * b * m * n * k + (b * m * n if name == "aten::baddbmm" else 0)
    return max((_numel(s) for s in shapes), default=0)


def launch_config(shapes, work, matmul):
    """Synthetic (grid, block, shared memory) for an operator: stable for equal shapes.

    grid.x covers the elements produced with 256-thread blocks, as most PyTorch kernels
    do; grid.y is a checksum of all operand shapes and dtypes, so that two calls of one
    operator that produce equally many elements from differently shaped operands (e.g. the
    weight-gradient GEMMs of two layers) still get different signatures."""
    grid_x = min(MAX_GRID_X, max(1, -(-work // BLOCK_THREADS)))
    grid_y = 1 + zlib.crc32(repr(shapes).encode()) % 65535
    shared = 48 * 1024 if matmul else 0
    return (grid_x, grid_y, 1), (BLOCK_THREADS, 1, 1), shared
