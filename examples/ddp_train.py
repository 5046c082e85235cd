"""Data-parallel training (DistributedDataParallel) on synthetic data: an unmodified script.

One process per GPU, started by torchrun; deepum is not imported. Under deepum every
worker gets deepum with its own rank's plan:
    deepum-run --plan 'mlp.rank{rank}.plan.pb' -- torchrun --nproc_per_node=2 examples/ddp_train.py
    torchrun --nproc_per_node=2 --no-python deepum-run --plan 'mlp.rank{rank}.plan.pb' \\
        python3 examples/ddp_train.py
On the CPU (`--device cpu`) the workers talk through gloo instead of NCCL.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64, help="samples per worker and step")
    p.add_argument("--width", type=int, default=4096, help="hidden units of the MLP")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main():
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device(args.device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank()

    torch.manual_seed(args.seed)  # the same initial model on every rank
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.width, 10)).to(device)
    model = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed + rank)  # each rank its own shard
    x = torch.randn(args.batch, args.width, generator=gen).to(device)
    y = torch.randint(0, 10, (args.batch,), generator=gen).to(device)

    for step in range(args.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP averages the gradients across ranks here
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        print(f"rank {rank} step {step} loss {loss.item():.4f} "
              f"time {1e3 * (time.perf_counter() - start):.1f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
