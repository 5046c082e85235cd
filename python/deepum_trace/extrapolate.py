"""Predict the trace of a large batch from traces of two small ones.

A training step's operator sequence and set of tensors do not depend on the batch size;
every tensor size, byte range and shape dimension is an affine function of it (a
per-sample part plus a fixed part). FLOPs are not extrapolated but recomputed from the
predicted shapes, since some (the largest operand of an op) are not affine. Two traces at batches b1 < b2 determine that
function, so the trace at batch B follows exactly: v(B) = v1 + (v2 - v1) * (B - b1) / (b2 - b1).

The assumption is checked rather than trusted: both traces must agree on everything that
is not a number (operators, tensors, the order of allocations and operators, modes, roles),
and every predicted number must come out a non-negative integer.

Frees are the one exception to a strict order. A free is seen where the last reference to a
storage goes, and that reference may belong to another thread: DistributedDataParallel's
gloo worker lets go of the buffers it broadcast a little before or after the training
thread's next operator. A free seen at different points in the two traces is kept at the
later one, where the storage is dead in both (merge_frees).
"""

from fractions import Fraction

from .capture import Access, Op, Storage, Trace


class ExtrapolationError(ValueError):
    pass


def extrapolate(small, large, batch):
    """Trace at `batch` predicted from traces `small` and `large` of the same workload."""
    b1, b2 = small.batch, large.batch
    if not b1 < b2:
        raise ExtrapolationError(f"need two traces at increasing batch sizes, got {b1} and {b2}")
    scale = Fraction(batch - b1, b2 - b1)

    def lin(v1, v2, what):
        v = v1 + (v2 - v1) * scale
        if v.denominator != 1 or v < 0:
            raise ExtrapolationError(
                f"{what}: {v1} at batch {b1} and {v2} at batch {b2} do not extrapolate to a "
                f"non-negative integer at batch {batch} ({float(v)})")
        return int(v)

    def same(a, b, what):
        if a != b:
            raise ExtrapolationError(
                f"traces at batch {b1} and {b2} differ in {what}: {a!r} vs {b!r}; the step "
                f"is not batch-independent, so it cannot be extrapolated (trace directly)")

    same(len(small.storages), len(large.storages), "number of tensors")
    same(len(small.ops), len(large.ops), "number of operators")
    events, moved = merge_frees(small.events, large.events, same)

    out = Trace(batch=batch, moved_frees=moved)
    for i, (s1, s2) in enumerate(zip(small.storages, large.storages)):
        same((s1.role, s1.label, s1.persistent), (s2.role, s2.label, s2.persistent),
             f"tensor {i}")
        nbytes = lin(s1.nbytes, s2.nbytes, f"size of tensor {i} ({s1.label})")
        if nbytes == 0:
            raise ExtrapolationError(f"tensor {i} ({s1.label}) would be empty at batch {batch}")
        out.storages.append(Storage(nbytes, s1.role, s1.label, s1.persistent))

    for i, (o1, o2) in enumerate(zip(small.ops, large.ops)):
        what = f"operator {i} ({o1.name})"
        same((o1.name, o1.params), (o2.name, o2.params), f"operator {i}")
        same([(d, len(s), w) for d, s, w in o1.shapes], [(d, len(s), w) for d, s, w in o2.shapes],
             f"operand types of {what}")
        same([(a.storage, a.mode) for a in o1.accesses],
             [(a.storage, a.mode) for a in o2.accesses], f"accesses of {what}")
        shapes = [(d, tuple(lin(x1, x2, f"shape of {what}") for x1, x2 in zip(s1, s2)), w)
                  for (d, s1, w), (_, s2, _) in zip(o1.shapes, o2.shapes)]
        accesses = [Access(a1.storage, lin(a1.offset, a2.offset, f"offset in {what}"),
                           lin(a1.nbytes, a2.nbytes, f"bytes accessed by {what}"), a1.mode)
                    for a1, a2 in zip(o1.accesses, o2.accesses)]
        out.ops.append(Op(o1.name, shapes, o1.params, accesses))
    out.events = events
    return out


def _first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def merge_frees(small, large, same):
    """One event order for two traces' `small` and `large` events: allocations and operators
    as both have them (`same` refuses any difference), each free at the later of its two
    points. Returns the events and how many frees were seen at different points."""
    def split(events):
        rest, slot = [], {}   # slot: storage -> how many allocations and operators precede
        for kind, i in events:
            if kind == "free":
                slot[i] = len(rest)
            else:
                rest.append((kind, i))
        return rest, slot

    rest1, slot1 = split(small)
    rest2, slot2 = split(large)
    first = _first_difference(rest1, rest2)
    same(rest1[first:first + 4], rest2[first:first + 4],
         f"order of allocations and operators from event {first} on ({len(rest1)} and "
         f"{len(rest2)} such events)")
    same(sorted(slot1), sorted(slot2), "storages freed during the step")
    rank = {i: n for n, i in enumerate(slot1)}      # the small trace's order of frees
    frees = sorted(slot1, key=lambda i: (max(slot1[i], slot2[i]), slot1[i], rank[i]))
    events, f = [], 0
    for n, event in enumerate(rest1 + [None]):
        while f < len(frees) and max(slot1[frees[f]], slot2[frees[f]]) == n:
            events.append(("free", frees[f]))
            f += 1
        if event is not None:
            events.append(event)
    return events, sum(slot1[i] != slot2[i] for i in slot1)
