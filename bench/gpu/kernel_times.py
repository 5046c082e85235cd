#!/usr/bin/env python3
"""Kernel time per training step of an unmodified script, by PyTorch's own
profiler (CUPTI's kernel records only, no Unified Memory counters): the
compute a deepum profile's kernel durations are held against.

    kernel_times.py OUT.json -- SCRIPT [ARGS...]

Each optimizer step ends a profiler step; after WAIT steps and one warm-up,
ACTIVE steps are recorded once (DEEPUM_KT_WAIT, DEEPUM_KT_ACTIVE: default 2
and 3; the script must run at least WAIT + 1 + ACTIVE steps). Writes the
kernels' time over the recorded steps (copies and memsets apart), the
kernels by total time and every launch in order with its duration (for
bench/gpu/torch_durations.py), and prints the time per step.
"""
import json
import os
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def after_each_optimizer_step(hook):
    """Calls hook() after every optimizer step (PyTorch 2's global hook; else
    the common optimizers' step methods wrapped)."""
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except ImportError:
        for cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
            def wrapped(self, *a, _step=cls.step, **k):
                r = _step(self, *a, **k)
                hook()
                return r
            cls.step = wrapped
        return
    register_optimizer_step_post_hook(lambda *a, **k: hook())


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: kernel_times.py OUT.json -- SCRIPT [ARGS...]")
    out, script, args = sys.argv[1], sys.argv[3], sys.argv[4:]
    wait = int(os.environ.get("DEEPUM_KT_WAIT", "2"))
    active = int(os.environ.get("DEEPUM_KT_ACTIVE", "3"))
    steps = []

    def ready(prof):
        events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        # Copies and memsets are GPU records too; the kernels are the rest.
        copies = [e for e in events if e.name.startswith(("Memcpy", "Memset"))]
        events = [e for e in events if not e.name.startswith(("Memcpy", "Memset"))]
        total_us = sum(e.time_range.elapsed_us() for e in events)
        by_name = {}
        for e in events:
            by_name[e.name] = by_name.get(e.name, 0.0) + e.time_range.elapsed_us()
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:15]
        # Every launch in the order it ran, whole name and duration: what
        # bench/gpu/torch_durations.py lays over a deepum profile's kernels.
        launches = [[e.name, e.time_range.elapsed_us()]
                    for e in sorted(events, key=lambda e: e.time_range.start)]
        steps.append({"kernels": len(events), "kernel_ms_total": total_us / 1e3,
                      "copies": len(copies),
                      "copy_ms_total": sum(e.time_range.elapsed_us() for e in copies) / 1e3,
                      "top": [[n[:120], t / 1e3] for n, t in top],
                      "launches": launches})

    # Without a GPU (a smoke test) the CPU activity stands in: no kernels.
    activity = ProfilerActivity.CUDA if torch.cuda.is_available() else ProfilerActivity.CPU
    prof = profile(activities=[activity],
                   schedule=schedule(wait=wait, warmup=1, active=active, repeat=1),
                   on_trace_ready=ready)
    after_each_optimizer_step(prof.step)
    sys.argv = [script] + args
    with prof:
        runpy.run_path(script, run_name="__main__")
    result = {"script": script, "args": args, "active_steps": active, "windows": steps}
    if steps:
        w = steps[-1]
        print(f"kernel_times: {w['kernel_ms_total'] / active:.3f} ms of kernels per step "
              f"({w['kernels'] // max(active, 1)} kernels per step)", flush=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
