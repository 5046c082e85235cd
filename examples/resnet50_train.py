"""Train torchvision's ResNet-50 on synthetic data: an unmodified training script.

Runs as is, under `deepum-profile` and under `deepum-run`; deepum is not imported (each
optimizer step marks an iteration).
    python3 examples/resnet50_train.py --batch 64 --steps 20
"""
import argparse
import os
import time

import torch
import torchvision


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic algorithms (for bit-for-bit comparisons)")
    p.add_argument("--save", help="write the final parameters here (torch.save)")
    return p.parse_args(argv)


def main():
    args = parse_args()

    torch.manual_seed(args.seed)
    if args.deterministic:
        # cuBLAS is deterministic only with a fixed workspace, named before its first use.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    device = torch.device(args.device)
    model = torchvision.models.resnet50().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen).to(device)
    y = torch.randint(0, 1000, (args.batch,), generator=gen).to(device)

    for step in range(args.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        print(f"step {step} loss {loss.item():.4f} time {1e3 * (time.perf_counter() - start):.1f} ms",
              flush=True)
    if args.save:
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, args.save)


if __name__ == "__main__":
    main()
