"""From a workload to the trace of one training step at the requested batch size."""

from . import capture, extrapolate


def trace_workload(workload, batch, direct=False, trace_batches=None, seed=0, progress=None):
    """The (possibly extrapolated) trace of one training step at `batch`, and a note on how
    it was obtained."""
    progress = progress or (lambda message: None)
    b1, b2 = trace_batches or workload.trace_batches
    warm = batch if direct else b1
    # Untraced steps first: they create the gradients and the optimizer state (and DDP's
    # final gradient buckets), which then persist across the traced iterations as they do
    # in training.
    for _ in range(workload.warmup_steps):
        progress(f"{workload.name}: warm-up step at batch {warm}")
        capture.train_step(workload, workload.make_batch(warm))
    if direct:
        progress(f"{workload.name}: tracing batch {batch}")
        return capture.trace_step(workload, batch, seed), f"traced directly at batch {batch}"
    traces = []
    for b in (b1, b2):
        progress(f"{workload.name}: tracing batch {b}")
        traces.append(capture.trace_step(workload, b, seed))
    progress(f"{workload.name}: extrapolating to batch {batch}")
    trace = extrapolate.extrapolate(traces[0], traces[1], batch)
    how = f"sizes and flops extrapolated linearly from traced batches {b1} and {b2}"
    if trace.moved_frees:
        how += (f" ({trace.moved_frees} free(s) seen at different points in the two traced "
                "steps, each kept at the later point)")
    return trace, how
