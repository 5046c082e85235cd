"""Command line: trace a model's training step and write a deepum profile.

    cd python && /usr/bin/python3 -m deepum_trace --model resnet50 --batch 128 --out resnet50.profile.pb.gz

One profile per rank of data-parallel (DistributedDataParallel) training:
    torchrun --nproc_per_node=2 -m deepum_trace --model resnet50 --batch 64 -o 'resnet50.rank{rank}.profile.pb.gz'
"""

import argparse
import contextlib
import os
import sys
import time

from . import build, devices, distributed, models, pb
from .pipeline import trace_workload


class Progress:
    def __init__(self, quiet=False):
        self.quiet = quiet
        self.start = time.monotonic()
        self.tag = ""

    def __call__(self, message):
        if not self.quiet:
            print(f"[deepum-trace{self.tag} {time.monotonic() - self.start:6.1f}s] {message}",
                  file=sys.stderr, flush=True)


def parse_batches(text):
    try:
        b1, b2 = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected two batch sizes, e.g. 2,4")
    if not 0 < b1 < b2:
        raise argparse.ArgumentTypeError("trace batches must be positive and increasing")
    return b1, b2


def parser():
    p = argparse.ArgumentParser(
        prog="python3 -m deepum_trace",
        description="Trace a real PyTorch training iteration on the CPU and write a derived "
                    "deepum profile (gzip-compressed deepum.v1.Profile).")
    p.add_argument("--model", required=True,
                   help="bert-large, gpt2-medium, bart-large, llama-1b, or a torchvision "
                        "classification model name")
    p.add_argument("--batch", type=int, required=True, help="batch size of the profile")
    p.add_argument("--seq-len", type=int, default=None,
                   help="tokens per sample (transformers; bart-large: source and target "
                        "each; default: the model's maximum)")
    p.add_argument("--checkpointing", action="store_true",
                   help="activation checkpointing: each block keeps only its input and runs "
                        "again in backward (llama-1b)")
    p.add_argument("--image-size", type=int, default=None,
                   help="image side for torchvision models (default 224; 299 for inception_v3)")
    p.add_argument("--iterations", type=int, default=3, help="iterations in the profile")
    # --device and --device-file as deepum-plan and deepum-sim read them (--device-model: the
    # earlier spelling).
    p.add_argument("--device", "--device-model", dest="device_model",
                   default=devices.DEFAULT_DEVICE_MODEL,
                   help="GPU model for the roofline and the Device record")
    p.add_argument("--device-file", default=None,
                   help="device models file whose fields override or add to the built-in models")
    p.add_argument("--trace-batches", type=parse_batches, default=None,
                   help="two small batch sizes traced for real and extrapolated from "
                        "(default: 2,4 for torchvision models, 2,3 for transformers)")
    p.add_argument("--direct", action="store_true",
                   help="trace at --batch itself instead of extrapolating")
    p.add_argument("--compute", choices=("cpu", "meta"), default="cpu",
                   help="cpu: real arithmetic; meta: PyTorch's meta device, shapes only (no "
                        "memory, no arithmetic) for models too large to train here; torch "
                        "1.13 has no meta convolution backward, so CNNs need cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    p.add_argument("-o", "--out", default=None,
                   help="output file; {rank} and {local_rank} are replaced by the torchrun "
                        "rank (default: <model>.profile.pb.gz, <model>.rank{rank}.profile.pb.gz "
                        "with several ranks)")
    p.add_argument("--dist-timeout", type=float, default=600,
                   help="seconds a rank waits for the others (process group set-up and each "
                        "collective) with several ranks")
    p.add_argument("--proto-module-dir", default=None,
                   help="directory holding the generated profile_pb2.py (default: the "
                        "installed package's, else the build tree's)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    progress = Progress(args.quiet)
    if args.batch < 1 or args.iterations < 1:
        print("error: --batch and --iterations must be positive", file=sys.stderr)
        return 2
    try:
        world = distributed.from_environ()
        default = f"{args.model}.rank{{rank}}.profile.pb.gz" if world.parallel \
            else f"{args.model}.profile.pb.gz"
        out = distributed.output_path(args.out or default, world)
        if world.parallel and args.compute != "cpu":
            raise distributed.DistributedError(
                f"data-parallel tracing needs --compute cpu: gloo cannot move {args.compute} "
                "tensors")
    except distributed.DistributedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if world.parallel:
        progress.tag = f" rank {world.rank}"
    import torch
    torch.set_num_threads(args.threads)
    try:
        return run(args, world, out, progress, torch)
    finally:
        if world.parallel:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()


def run(args, world, out, progress, torch):
    try:
        device = devices.load_device_model(args.device_model, args.device_file)
        module = pb.load(args.proto_module_dir)
        progress(f"building {args.model}")
        # On the meta device the weights' values never matter: build them there directly.
        with models.meta_init() if args.compute == "meta" else contextlib.nullcontext():
            workload = models.build_workload(args.model, args.seq_len, args.image_size,
                                             args.seed, args.checkpointing)
        workload.to(args.compute)
        if world.parallel:
            progress(f"joining the gloo process group of {world.size} ranks")
            distributed.join(world, args.dist_timeout)
            distributed.wrap(workload)
        trace, how = trace_workload(workload, args.batch, args.direct, args.trace_batches,
                                    args.seed, progress)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        hint = ""
        if args.compute == "meta" and not isinstance(err, ValueError):
            hint = (" (torch 1.13's meta device lacks some operators, e.g. convolution "
                    "backward; use --compute cpu)")
        print(f"error: {str(err).strip()}{hint}", file=sys.stderr)
        return 2
    notes = (f"{workload.description}. Derived from a CPU trace of one training step "
             f"(forward, backward, optimizer) with torch {torch.__version__} "
             f"({'real arithmetic' if args.compute == 'cpu' else 'meta device, shapes only'}); "
             f"{how}; "
             f"kernel durations from the {device.name} roofline; addresses from an "
             f"emulation of the CUDA caching allocator.")
    if world.parallel:
        notes += (f" Rank {world.rank} (local rank {world.local_rank}) of {world.size} in "
                  f"data-parallel training (DistributedDataParallel, gloo on the CPU): "
                  f"gradient buckets ddp.gradient_bucket*.")
    progress(f"{workload.name}: building {args.iterations} iterations")
    prof, stats = build.build_profile(module, trace, device, args.iterations, {
        "model": args.model, "batch_size": args.batch,
        "sequence_length": workload.sequence_length,
        "parameter_count": workload.parameter_count, "notes": notes})
    if world.parallel:
        prof.device.ordinal = world.local_rank
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    size = build.write_profile(out, prof)
    progress(f"wrote {out}: {size} bytes, {stats.kernels_per_iteration} kernels/iteration, "
             f"peak live {stats.peak_live_bytes / 2**30:.2f} GiB, "
             f"{stats.footprint_blocks} distinct 2 MiB blocks touched in the last iteration "
             f"(footprint {stats.footprint_blocks * build.UM_BLOCK_BYTES / 2**30:.2f} GiB, "
             f"what --oversubscription divides), parameters "
             f"{stats.parameter_bytes / 2**20:.1f} MiB, iteration "
             f"{stats.iteration_ns / 1e6:.1f} ms on {device.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
