"""Regenerate the derived profiles shipped in tests/data.

    cd python && /usr/bin/python3 -m deepum_trace.ship --out ../tests/data

Each model runs in its own process (the transformers need several GB) and the set must
stay under a size budget so that simulator tests stay fast and the repository small.
"""

import argparse
import os
import subprocess
import sys

from . import build, pb

# name -> arguments. Sizes give realistic footprints for a 16 GB V100 without making the
# simulator slow. Real arithmetic for gpt2-medium at 1024 tokens would need about 20 GB of
# host memory at trace batch 3 (5.7 GB of weights, gradients and Adam state plus ~5 GB of
# saved activations per sample), more than this machine has, so it runs on the meta device
# (shapes only), which a unit test shows traces the same operators and tensors as real
# arithmetic; with no arithmetic to save, it is traced at its batch directly.
MODELS = {
    "resnet50": ["--batch", "128"],
    "vgg16": ["--batch", "128"],
    "vit_b_16": ["--batch", "64"],
    "bert-large": ["--batch", "16", "--seq-len", "512"],
    "gpt2-medium": ["--batch", "8", "--seq-len", "1024", "--compute", "meta", "--direct"],
    # Workloads trained today, on the meta device for the same reason: an encoder-decoder
    # with cross-attention, and a 1B Llama-shaped decoder under bf16 autocast (fp32 master
    # weights, AdamW), without and with activation checkpointing at the same batch.
    "bart-large": ["--batch", "8", "--seq-len", "512", "--compute", "meta", "--direct"],
    "llama-1b": ["--batch", "4", "--seq-len", "1024", "--compute", "meta", "--direct"],
    "llama-1b-ckpt": ["--model", "llama-1b", "--checkpointing", "--batch", "4",
                      "--seq-len", "1024", "--compute", "meta", "--direct"],
    # ResNet-50 at batch 32: about 10 block uses per kernel, so repeating it gives the planner's
    # speed benchmark its target shape, 100k kernels and 1M block uses per iteration (bench/plan).
    "resnet50-b32": ["--model", "resnet50", "--batch", "32"],
}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m deepum_trace.ship",
                                description="Regenerate the derived profiles in tests/data.")
    p.add_argument("--out", required=True, help="directory for <model>.profile.pb.gz")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--device", "--device-model", dest="device_model", default="v100-pcie-16gb")
    p.add_argument("--only", nargs="*", choices=sorted(MODELS), help="regenerate only these")
    p.add_argument("--budget-mb", type=float, default=20.0, help="limit on the whole set")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in args.only or MODELS:
        path = os.path.join(args.out, f"{name}.profile.pb.gz")
        model = [] if "--model" in MODELS[name] else ["--model", name]
        cmd = [sys.executable, "-m", "deepum_trace", *model, *MODELS[name],
               "--iterations", str(args.iterations), "--device", args.device_model,
               "--out", path]
        print(f"$ {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        if subprocess.run(cmd, cwd=here).returncode != 0:
            print(f"error: tracing {name} failed", file=sys.stderr)
            return 1

    module = pb.load()
    total = 0
    # Peak live bytes (allocations alive at once) beside the footprint deepum-sim divides
    # by --oversubscription: distinct 2 MiB blocks the last iteration touches, x 2 MiB.
    print(f"{'model':<14} {'file bytes':>11} {'kernels/iter':>12} {'peak live GiB':>13} "
          f"{'2MiB blocks':>11} {'footprint GiB':>13} {'param MiB':>10} {'iter ms':>8}")
    for name in MODELS:
        path = os.path.join(args.out, f"{name}.profile.pb.gz")
        if not os.path.exists(path):
            continue
        prof = build.read_profile(module, path)
        problems = build.check_profile(prof)
        if problems:
            print(f"error: {path}: {problems[:5]}", file=sys.stderr)
            return 1
        size = os.path.getsize(path)
        total += size
        it = prof.iterations[0]
        params = sum(a.size_bytes for a in prof.allocations
                     if a.role == module.ALLOCATION_ROLE_PARAMETER)
        blocks = build.footprint_blocks(prof)
        print(f"{name:<14} {size:>11} {it.kernel_count:>12} "
              f"{build.peak_live_bytes(prof) / 2**30:>13.2f} {blocks:>11} "
              f"{blocks * build.UM_BLOCK_BYTES / 2**30:>13.2f} {params / 2**20:>10.1f} "
              f"{(it.end_ns - it.start_ns) / 1e6:>8.1f}")
    print(f"total {total} bytes ({total / 2**20:.2f} MiB; budget {args.budget_mb} MB)")
    if total > args.budget_mb * 1e6:
        print("error: the shipped profiles exceed the budget; lower batch sizes or iterations",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
