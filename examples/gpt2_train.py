"""Train a GPT-2 (Hugging Face transformers, from config: nothing downloaded) on synthetic tokens.

An unmodified training script: runs under `deepum-profile` and `deepum-run`; deepum is not
imported (each optimizer step marks an iteration).
    python3 examples/gpt2_train.py --size medium --batch 4 --seq-len 1024 --steps 20
"""
import argparse
import os
import time

import torch

SIZES = {  # (layers, hidden, heads) of the published GPT-2 family
    "small": (12, 768, 12),
    "medium": (24, 1024, 16),
    "large": (36, 1280, 20),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="medium")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deterministic", action="store_true",
                   help="deterministic algorithms (for bit-for-bit comparisons)")
    p.add_argument("--save", help="write the final parameters here (torch.save)")
    return p.parse_args(argv)


def main():
    args = parse_args()

    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        raise SystemExit("gpt2_train.py needs the `transformers` package")
    torch.manual_seed(args.seed)
    if args.deterministic:
        # cuBLAS is deterministic only with a fixed workspace, named before its first use.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    layers, hidden, heads = SIZES[args.size]
    config = GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, n_positions=args.seq_len)
    device = torch.device(args.device)
    model = GPT2LMHeadModel(config).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(args.seed)
    tokens = torch.randint(0, config.vocab_size, (args.batch, args.seq_len), generator=gen).to(device)

    for step in range(args.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = model(tokens, labels=tokens).loss
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
