"""Record one real training step: every ATen operator, what it reads and writes, and
every tensor storage's lifetime.

A TorchDispatchMode sees each operator below autograd, forward, backward (the autograd
engine runs CPU work on the calling thread, with our mode in its thread-local state) and
optimizer alike. Tensors are identified by their storage (views share it), because the
storage is what the caching allocator hands out and what a kernel's bytes live in.

Lifetimes: we hold a weak reference to every storage an iteration creates and check,
before each operator, which ones have expired. A storage therefore dies exactly between
the operators where PyTorch releases its last reference, including references held only
by C++ (saved tensors of the autograd graph). The weak references also keep a dead
storage's address from being reused while we still know it under that key.

One operator is one kernel, except operators that launch nothing on a GPU: views and
other aliasing or metadata-only operators, bare allocations (empty*), and operators
whose tensors all live on the host (the optimizer's step counters, wrapped scalars).
"""

import contextlib
import gc
import math
from dataclasses import dataclass, field
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from . import cost, fastmath

# Access modes; the numbers are deepum.v1.AccessMode's, and READ | WRITE == READ_WRITE.
READ, WRITE, READ_WRITE = 1, 2, 3

# Operators that allocate but compute nothing.
ALLOCATION_ONLY_OPS = frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
    "aten::new_empty_strided",
})
# In-place operators that change only a tensor's metadata.
METADATA_INPLACE_OPS = frozenset({
    "aten::detach_", "aten::as_strided_", "aten::squeeze_", "aten::unsqueeze_", "aten::t_",
    "aten::transpose_", "aten::swapaxes_", "aten::swapdims_", "aten::requires_grad_",
})
# In-place operators that overwrite their destination without reading it.
OVERWRITING_OPS = frozenset({
    "aten::zero_", "aten::fill_", "aten::copy_", "aten::normal_", "aten::uniform_",
    "aten::bernoulli_", "aten::random_", "aten::exponential_", "aten::geometric_",
    "aten::cauchy_", "aten::log_normal_",
})

# Mutations the 1.13 schemas do not declare: batch norm in training mode updates the running
# statistics (arguments 3 and 4) in place. name -> (positions, predicate on the arguments).
UNDECLARED_MUTATIONS = {
    "aten::native_batch_norm": ((3, 4), lambda args: bool(args[5])),
    "aten::cudnn_batch_norm": ((3, 4), lambda args: bool(args[5])),
}


@dataclass
class Storage:
    nbytes: int
    role: str
    label: str
    persistent: bool        # exists before the step and outlives it (parameters, state)


@dataclass
class Access:
    storage: int            # index into Trace.storages
    offset: int
    nbytes: int
    mode: int


@dataclass
class Op:
    name: str
    # (dtype, shape, written) of every tensor operand in schema order, then of every fresh
    # result: the operator's signature and the input of its cost model.
    shapes: List[Tuple]
    params: Tuple           # non-tensor arguments the FLOP count needs (cost.flop_params)
    accesses: List[Access]

    @property
    def matmul(self):
        return self.name in cost.MATMUL_OPS

    @property
    def flops(self):
        return cost.op_flops(self.name, [s for _, s, _ in self.shapes], self.params)

    @property
    def work(self):
        """Elements written, for the synthetic grid."""
        return max((math.prod(s) for _, s, w in self.shapes if w), default=0)


@dataclass
class Trace:
    """One training step. events: ("alloc", storage), ("free", storage), ("op", op), in order;
    persistent storages have no events. Every transient storage is allocated and freed
    within the step. moved_frees: in an extrapolated trace, how many frees the two traced
    steps saw at different points (each kept at the later one)."""
    batch: int
    storages: List[Storage] = field(default_factory=list)
    ops: List[Op] = field(default_factory=list)
    events: List[Tuple[str, int]] = field(default_factory=list)
    moved_frees: int = 0


def _storage_key(t):
    return t._storage()._cdata


def _byte_range(t):
    """[start, end) bytes of t's storage that t's elements span."""
    size = t.element_size()
    extent = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    start = t.storage_offset() * size
    return start, start + extent * size


def merge_ranges(ranges):
    """Split overlapping (start, end, mode) ranges into disjoint pieces whose mode is the
    union of the modes covering them, coalescing neighbours of equal mode."""
    cuts = sorted({p for s, e, _ in ranges for p in (s, e)})
    pieces = []
    for a, b in zip(cuts, cuts[1:]):
        mode = 0
        for s, e, m in ranges:
            if s < b and e > a:
                mode |= m
        if not mode:
            continue
        if pieces and pieces[-1][1] == a and pieces[-1][2] == mode:
            pieces[-1] = (pieces[-1][0], b, mode)
        else:
            pieces.append((a, b, mode))
    return pieces


def _schema_tensors(func, args, kwargs):
    """(tensor, written, is_out) for every tensor argument, following the schema so that
    mutated arguments (Tensor(a!)) are known."""
    found = []
    position = 0
    undeclared, applies = UNDECLARED_MUTATIONS.get(func._schema.name, ((), None))
    mutated = set(undeclared) if applies is not None and applies(args) else set()
    for arg in func._schema.arguments:
        if arg.kwarg_only:
            value = kwargs.get(arg.name)
        else:
            value = args[position] if position < len(args) else kwargs.get(arg.name)
            position += 1
        written = (arg.alias_info is not None and arg.alias_info.is_write) \
            or (not arg.kwarg_only and position - 1 in mutated)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for v in values:
            if isinstance(v, torch.Tensor):
                found.append((v, written, written and arg.kwarg_only))
    return found


def _flatten_tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten_tensors(v)]
    return []


class Recorder(TorchDispatchMode):
    def __init__(self, batch, held=None):
        """held: (role, label prefix) for storages the step finds that outlive it in other
        hands (DistributedDataParallel's gradient buckets, held by its C++ reducer); they
        become persistent. None: such storages are freed at the end of the step."""
        super().__init__()
        self.trace = Trace(batch=batch)
        self.held = held
        self.untracked = set()  # storage indices that appeared without an operator we saw
        self.index = {}       # storage key -> storage index, for every live storage we know
        self.watched = {}     # storage key -> StorageWeakRef, transient storages
        self.host = {}        # storage key -> StorageWeakRef, host-side storages
        self.persistent = {}  # storage key -> StorageWeakRef, parameters and state
        self.phase = "forward"

    # -- registration ------------------------------------------------------------------

    def add_persistent(self, tensor, role, label):
        key = _storage_key(tensor)
        nbytes = tensor._storage().nbytes()
        if key in self.index or nbytes == 0:
            return
        self.index[key] = len(self.trace.storages)
        # Held so that the key stays unique even if the storage were to die.
        self.persistent[key] = StorageWeakRef(tensor._storage())
        self.trace.storages.append(Storage(nbytes, role, label, True))

    def add_host(self, tensor):
        self.host[_storage_key(tensor)] = StorageWeakRef(tensor._storage())

    def add_transient(self, tensor, role, label):
        storage = tensor._storage()
        key = storage._cdata
        if storage.nbytes() == 0:
            return None
        idx = len(self.trace.storages)
        self.index[key] = idx
        self.watched[key] = StorageWeakRef(storage)
        self.trace.storages.append(Storage(storage.nbytes(), role, label, False))
        self.trace.events.append(("alloc", idx))
        return idx

    # -- lifetimes ---------------------------------------------------------------------

    def poll_frees(self):
        dead = [k for k, ref in self.watched.items() if ref.expired()]
        for key in dead:
            del self.watched[key]
            self.trace.events.append(("free", self.index.pop(key)))
        for key in [k for k, ref in self.host.items() if ref.expired()]:
            del self.host[key]

    def finish(self):
        """End of the step: whatever the caller still holds (inputs, the loss) is freed now."""
        self.poll_frees()
        if self.held is not None:
            self._adopt_held()
        for key in list(self.watched):
            del self.watched[key]
            self.trace.events.append(("free", self.index.pop(key)))
        for key, ref in self.persistent.items():
            if ref.expired():
                label = self.trace.storages[self.index[key]].label
                raise RuntimeError(f"'{label}' was freed during the step: parameters, "
                                   "gradients and optimizer state must persist")

    def _adopt_held(self):
        """Untracked storages still alive once the step and its caller have let go of them
        existed before the step and outlive it: persistent, like parameters. Their
        allocation events go; a persistent storage exists from the start."""
        role, prefix = self.held
        adopted = set()
        for key in [k for k in self.watched if self.index[k] in self.untracked]:
            i = self.index[key]
            s = self.trace.storages[i]
            self.trace.storages[i] = Storage(s.nbytes, role, f"{prefix}{len(adopted)}", True)
            self.persistent[key] = self.watched.pop(key)
            adopted.add(i)
        self.trace.events = [e for e in self.trace.events
                             if not (e[0] == "alloc" and e[1] in adopted)]

    # -- operators ---------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.poll_frees()
        out = fastmath.run(func, args, kwargs)
        if not func._schema.name.startswith("profiler::"):
            self._record(func, args, kwargs, out)
        return out

    def _record(self, func, args, kwargs, out):
        name = func._schema.name
        operands = _schema_tensors(func, args, kwargs)
        results = _flatten_tensors(out)
        device_inputs = [t for t, _, _ in operands if not self._is_host(t)]
        if operands and not device_inputs:
            # A host-side operator (e.g. the optimizer's step counter += 1): not a kernel,
            # and whatever it creates stays on the host too.
            for t in results:
                if _storage_key(t) not in self.index:
                    self.add_host(t)
            return

        ranges = {}       # storage index -> [(start, end, mode)]
        written_keys = set()
        input_keys = set()

        def touch(t, mode):
            if t.numel() == 0:
                return
            start, end = _byte_range(t)
            ranges.setdefault(self.index[_storage_key(t)], []).append((start, end, mode))

        for t, written, is_out in operands:
            key = _storage_key(t)
            if key in self.host or t._storage().nbytes() == 0:
                continue
            if key not in self.index:
                if t.dim() == 0:
                    continue    # a wrapped Python scalar: lives on the host
                # Memory that appeared without an operator we saw (e.g. torch.tensor data,
                # or state created before the step and held outside the model).
                self.untracked.add(
                    self.add_transient(t, self._phase_role(), f"{self.phase}:untracked"))
            input_keys.add(key)
            if written:
                written_keys.add(key)
                overwrite = is_out or (name in OVERWRITING_OPS and t is operands[0][0])
                touch(t, WRITE if overwrite else READ_WRITE)
            else:
                touch(t, READ)

        produced = []
        for t in results:
            key = _storage_key(t)
            if key in written_keys or key in input_keys or t._storage().nbytes() == 0:
                continue    # an in-place result or a view of an operand
            if key not in self.index:
                self.add_transient(t, self._phase_role(), f"{self.phase}:{name}")
            produced.append(t)
            touch(t, WRITE)

        launches = (written_keys or produced) and name not in ALLOCATION_ONLY_OPS \
            and name not in METADATA_INPLACE_OPS
        if not launches or not ranges:
            return
        accesses = [Access(s, a, b - a, m)
                    for s in sorted(ranges) for a, b, m in merge_ranges(ranges[s])]
        shapes = [(str(t.dtype)[6:], tuple(t.shape), w) for t, w, _ in operands] \
            + [(str(t.dtype)[6:], tuple(t.shape), True) for t in produced]
        self.trace.ops.append(Op(name, shapes, cost.flop_params(name, args), accesses))
        self.trace.events.append(("op", len(self.trace.ops) - 1))

    def _is_host(self, t):
        key = _storage_key(t)
        return key in self.host or (key not in self.index and t.dim() == 0)

    def _phase_role(self):
        return "WORKSPACE" if self.phase == "optimizer" else "ACTIVATION"


class _NoRecordFunction:
    """Stands in for torch.autograd.profiler.record_function, whose handle is a host
    tensor created by a factory operator that would otherwise look like a kernel."""

    def __init__(self, name, args=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def gpu_like_python():
    """Make Python-level helpers dispatch the operators they dispatch on a CUDA device.

    On CUDA, dropout is one fused operator (native_dropout and its backward); on the CPU it
    decomposes into bernoulli_, div_ and mul, which would mislead the op sequence."""
    original_dropout = F.dropout
    original_record_function = torch.autograd.profiler.record_function

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace:
            return torch.native_dropout(input, p, True)[0]
        return original_dropout(input, p, training, inplace)

    F.dropout = dropout
    torch.autograd.profiler.record_function = _NoRecordFunction
    try:
        yield
    finally:
        F.dropout = original_dropout
        torch.autograd.profiler.record_function = original_record_function


def train_step(workload, batch_data, recorder=None):
    """One training iteration as a training loop runs it."""
    def phase(name):
        if recorder is not None:
            recorder.phase = name

    model = workload.model if workload.wrapper is None else workload.wrapper

    # Untraced steps still need fast GEMMs; a traced step gets them from the recorder.
    fast = fastmath.FastMathMode() if recorder is None else contextlib.nullcontext()
    with gpu_like_python(), fast:
        phase("zero_grad")
        # Gradients stay allocated across iterations (zeroed, not set to None).
        workload.optimizer.zero_grad(set_to_none=False)
        phase("forward")
        loss = workload.loss(model, batch_data)
        phase("backward")
        loss.backward()
        del loss
        phase("optimizer")
        workload.optimizer.step()


def trace_step(workload, batch, seed=0):
    """Trace one training step at the given batch size. The workload must have taken its
    warm-up steps (Workload.warmup_steps, untraced), so gradients and optimizer state
    exist."""
    torch.manual_seed(seed)
    batch_data = workload.make_batch(batch)
    recorder = Recorder(batch, workload.held_state)
    names = {}
    for name, p in workload.model.named_parameters():
        names[p] = name
        recorder.add_persistent(p, "PARAMETER", name)
    for name, b in workload.model.named_buffers():
        # Buffers (BatchNorm statistics, masks) persist but are neither parameters nor
        # optimizer state; the profile format has no role for them.
        recorder.add_persistent(b, "UNSPECIFIED", name)
    for p, name in names.items():
        if p.grad is not None:
            recorder.add_persistent(p.grad, "GRADIENT", name + ".grad")
    for p, state in workload.optimizer.state.items():
        for key, value in state.items():
            if not isinstance(value, torch.Tensor):
                continue
            if key in workload.host_state:
                recorder.add_host(value)    # e.g. Adam's step count: a CPU tensor on GPUs too
            else:
                recorder.add_persistent(value, "OPTIMIZER_STATE", f"{names[p]}.{key}")
    for label, t in batch_data.items():
        recorder.add_transient(t, "INPUT", label)

    # Python's cycle collector would free cyclic garbage at arbitrary points; lifetimes
    # must depend only on reference counts to be reproducible.
    gc.collect()
    gc.disable()
    try:
        with recorder:
            train_step(workload, batch_data, recorder)
    finally:
        gc.enable()
    del batch_data
    recorder.finish()
    return recorder.trace


def summarize(trace):
    """(kernels, persistent bytes, peak live bytes) of a trace."""
    persistent = sum(s.nbytes for s in trace.storages if s.persistent)
    live = peak = persistent
    for kind, i in trace.events:
        if kind == "alloc":
            live += trace.storages[i].nbytes
            peak = max(peak, live)
        elif kind == "free":
            live -= trace.storages[i].nbytes
    return len(trace.ops), persistent, peak
