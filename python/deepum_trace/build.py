"""Turn a traced training step into a deepum.v1.Profile.

The step is repeated for the requested number of iterations on one timeline: kernels run
back to back on one stream with roofline durations, persistent tensors (parameters,
gradients, optimizer state, buffers) are allocated once at time 0, and each iteration's
tensors are placed again through the caching-allocator emulation, so their addresses
change the way they do in a real run once the cache is warm.
"""

import bisect
import gzip
from dataclasses import dataclass

from . import VERSION, cost
from .capture import READ, READ_WRITE, WRITE
from .placement import CachingAllocator

UM_BLOCK_BYTES = 2 * 1024 * 1024
PAGE_BYTES = 64 * 1024
PAGES_PER_BLOCK = UM_BLOCK_BYTES // PAGE_BYTES


@dataclass
class ProfileStats:
    kernels_per_iteration: int
    parameter_bytes: int
    persistent_bytes: int
    peak_live_bytes: int
    peak_reserved_bytes: int
    iteration_ns: int
    # Distinct 2 MiB blocks the last iteration's kernels touch: deepum-sim's footprint
    # (and the one --oversubscription divides) is this times 2 MiB.
    footprint_blocks: int = 0


def _mask(lo, hi):
    """Bits lo..hi inclusive."""
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


def block_accesses(ranges):
    """BlockAccess tuples (block, page_mask, mode) for a kernel's (address, bytes, mode) ranges.

    Blocks come out ascending, each once. A block is READ when the kernel only reads it,
    WRITE only when every page it touches there is entirely overwritten (so the old
    contents of those pages are dead), and READ_WRITE otherwise: a page partly written
    still holds bytes someone else may need."""
    touched, read, full = {}, {}, {}
    partial = {}      # global page -> bytes written in it
    for address, nbytes, mode in ranges:
        end = address + nbytes
        first_page, last_page = address // PAGE_BYTES, (end - 1) // PAGE_BYTES
        full_lo, full_hi = -(-address // PAGE_BYTES), end // PAGE_BYTES - 1
        for block in range(address // UM_BLOCK_BYTES, (end - 1) // UM_BLOCK_BYTES + 1):
            base = block * PAGES_PER_BLOCK
            lo, hi = max(first_page, base), min(last_page, base + PAGES_PER_BLOCK - 1)
            bits = _mask(lo - base, hi - base)
            touched[block] = touched.get(block, 0) | bits
            if mode & READ:
                read[block] = read.get(block, 0) | bits
            if mode & WRITE:
                flo, fhi = max(lo, full_lo), min(hi, full_hi)
                if flo <= fhi:
                    full[block] = full.get(block, 0) | _mask(flo - base, fhi - base)
        if mode & WRITE:
            for page in {first_page, last_page}:
                if not full_lo <= page <= full_hi:
                    covered = min(end, (page + 1) * PAGE_BYTES) - max(address, page * PAGE_BYTES)
                    partial[page] = partial.get(page, 0) + covered
    for page, covered in partial.items():
        if covered >= PAGE_BYTES:   # distinct outputs that together fill a page
            block = page // PAGES_PER_BLOCK
            full[block] = full.get(block, 0) | (1 << (page % PAGES_PER_BLOCK))
    result = []
    for block in sorted(touched):
        written = full.get(block, 0) or any(p // PAGES_PER_BLOCK == block for p in partial)
        if not written:
            mode = READ
        elif not read.get(block) and full.get(block, 0) == touched[block]:
            mode = WRITE
        else:
            mode = READ_WRITE
        result.append((block, touched[block], mode))
    return result


def op_dram_bytes(op):
    """Bytes the kernel moves: every byte read once and written once."""
    return sum(a.nbytes * (2 if a.mode == READ_WRITE else 1) for a in op.accesses)


def build_profile(pb, trace, device, iterations, workload):
    """workload: dict with model, batch_size, sequence_length, parameter_count, notes."""
    if iterations < 1:
        raise ValueError("iterations must be >= 1")
    prof = pb.Profile(
        format_version=pb.PROFILE_FORMAT_CURRENT,
        producer=f"deepum-trace {VERSION} (roofline {device.name})",
        um_block_bytes=UM_BLOCK_BYTES,
        access_source=pb.ACCESS_SOURCE_DERIVED_TRACE)
    prof.device.name = device.name
    prof.device.memory_bytes = device.memory_bytes
    prof.device.link = device.link
    prof.device.link_bytes_per_second = device.link_bytes_per_second
    prof.device.concurrent_managed_access = True
    prof.device.compute_capability = device.compute_capability
    prof.workload.model = workload["model"]
    prof.workload.batch_size = workload["batch_size"]
    prof.workload.sequence_length = workload.get("sequence_length", 0)
    prof.workload.parameter_count = workload.get("parameter_count", 0)
    prof.workload.notes = workload.get("notes", "")
    prof.recording.um_counters_enabled = False
    prof.recording.um_counters_error = "derived from a CPU trace: no unified-memory counters"

    flops = [op.flops for op in trace.ops]
    durations = [device.kernel_ns(f, op_dram_bytes(op), op.matmul)
                 for f, op in zip(flops, trace.ops)]
    launch = [cost.launch_config(op.shapes, op.work, op.matmul) for op in trace.ops]
    roles = [pb.AllocationRole.Value("ALLOCATION_ROLE_" + s.role) for s in trace.storages]

    allocator = CachingAllocator()
    placed = {}       # storage index -> (Allocation message, address)
    live = peak = 0

    def allocate(i, time_ns):
        nonlocal live, peak
        s = trace.storages[i]
        address = allocator.malloc(s.nbytes)
        msg = prof.allocations.add(id=len(prof.allocations) + 1, size_bytes=s.nbytes,
                                   address=address, alloc_time_ns=time_ns, role=roles[i],
                                   label=s.label)
        placed[i] = (msg, address)
        live += s.nbytes
        peak = max(peak, live)

    for i, s in enumerate(trace.storages):
        if s.persistent:
            allocate(i, 0)
    persistent_bytes = live

    now = 0
    for iteration in range(iterations):
        first, start = len(prof.kernels), now
        for kind, i in trace.events:
            if kind == "alloc":
                allocate(i, now)
            elif kind == "free":
                msg, address = placed.pop(i)
                allocator.free(address)
                msg.freed, msg.free_time_ns = True, now
                live -= msg.size_bytes
            else:
                op = trace.ops[i]
                (gx, gy, gz), (bx, by, bz), shared = launch[i]
                k = prof.kernels.add(name=op.name, shared_memory_bytes=shared, start_ns=now,
                                     end_ns=now + durations[i], flops=float(flops[i]),
                                     dram_bytes=float(op_dram_bytes(op)))
                k.grid.x, k.grid.y, k.grid.z = gx, gy, gz
                k.block.x, k.block.y, k.block.z = bx, by, bz
                ranges = []
                for a in op.accesses:
                    msg, address = placed[a.storage]
                    k.tensors.add(allocation_id=msg.id, offset=a.offset, bytes=a.nbytes,
                                  mode=a.mode)
                    ranges.append((address + a.offset, a.nbytes, a.mode))
                for block, page_mask, mode in block_accesses(ranges):
                    k.blocks.add(block=block, page_mask=page_mask, mode=mode)
                now += durations[i]
        prof.iterations.add(index=iteration, first_kernel=first,
                            kernel_count=len(prof.kernels) - first, start_ns=start, end_ns=now)

    parameter_bytes = sum(s.nbytes for s in trace.storages if s.role == "PARAMETER")
    stats = ProfileStats(len(trace.ops), parameter_bytes, persistent_bytes, peak,
                         allocator.peak_reserved_bytes, sum(durations),
                         footprint_blocks(prof))
    return prof, stats


def write_profile(path, prof):
    """Binary protobuf, gzip-compressed; byte-identical for identical profiles (fixed field
    order, no timestamp or file name in the gzip header)."""
    data = gzip.compress(prof.SerializeToString(deterministic=True), compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def read_profile(pb, path):
    with open(path, "rb") as f:
        return pb.Profile.FromString(gzip.decompress(f.read()))


def check_profile(prof):
    """Invariants every profile we write must satisfy; returns a list of violations."""
    problems = []
    allocs = {a.id: a for a in prof.allocations}
    if len(allocs) != len(prof.allocations):
        problems.append("duplicate allocation ids")
    times = [a.alloc_time_ns for a in prof.allocations]
    if times != sorted(times):
        problems.append("allocations not in allocation-time order")
    # Live allocations never overlap: sweep alloc/free events in time order (a free at t
    # happens before an allocation at t, as the events were replayed).
    events = sorted([(a.alloc_time_ns, 1, a.id) for a in prof.allocations]
                    + [(a.free_time_ns, 0, a.id) for a in prof.allocations if a.freed])
    live = []    # sorted (address, end)
    for _, is_alloc, aid in events:
        a = allocs[aid]
        span = (a.address, a.address + a.size_bytes)
        if is_alloc:
            i = bisect.bisect_left(live, span)
            if (i > 0 and live[i - 1][1] > span[0]) or (i < len(live) and live[i][0] < span[1]):
                problems.append(f"allocation {aid} overlaps a live allocation")
            live.insert(i, span)
        else:
            live.remove(span)
    prev_end = None
    for n, k in enumerate(prof.kernels):
        if k.end_ns < k.start_ns or (prev_end is not None and k.start_ns != prev_end):
            problems.append(f"kernel {n}: not back to back")
        prev_end = k.end_ns
        ranges = []
        for t in k.tensors:
            a = allocs.get(t.allocation_id)
            if a is None or t.bytes == 0 or t.offset + t.bytes > a.size_bytes:
                problems.append(f"kernel {n}: bad tensor access {t}")
                continue
            if a.alloc_time_ns > k.start_ns or (a.freed and a.free_time_ns < k.end_ns):
                problems.append(f"kernel {n}: allocation {a.id} not live")
            ranges.append((a.address + t.offset, t.bytes, t.mode))
        expected = block_accesses(ranges)
        got = [(b.block, b.page_mask, b.mode) for b in k.blocks]
        if got != expected:
            problems.append(f"kernel {n}: blocks do not match its tensors")
    first = 0
    for i, it in enumerate(prof.iterations):
        if it.index != i or it.first_kernel != first or it.kernel_count == 0:
            problems.append(f"iteration {i}: not contiguous")
        last = prof.kernels[it.first_kernel + it.kernel_count - 1]
        if it.start_ns != prof.kernels[it.first_kernel].start_ns or it.end_ns != last.end_ns:
            problems.append(f"iteration {i}: times do not match its kernels")
        first += it.kernel_count
    if first != len(prof.kernels):
        problems.append("iterations do not cover every kernel")
    return problems


def footprint_blocks(prof):
    """Distinct UM blocks the kernels of the last iteration touch, as deepum-sim counts its
    footprint (whose bytes, blocks x 2 MiB, --oversubscription divides)."""
    if not prof.iterations:
        kernels = prof.kernels
    else:
        it = prof.iterations[-1]
        kernels = prof.kernels[it.first_kernel:it.first_kernel + it.kernel_count]
    return len({b.block for k in kernels for b in k.blocks})


def peak_live_bytes(prof):
    """Largest sum of live allocation sizes at any time (frees at t before allocations at t)."""
    events = sorted([(a.alloc_time_ns, 1, a.size_bytes) for a in prof.allocations]
                    + [(a.free_time_ns, 0, a.size_bytes) for a in prof.allocations if a.freed])
    live = peak = 0
    for _, is_alloc, size in events:
        live += size if is_alloc else -size
        peak = max(peak, live)
    return peak
