#!/usr/bin/env python3
"""What a user would pick instead of deepum, trained at the same memory:

    alternatives.py --model resnet50|gpt2|tiny --mode MODE [--memory-bytes B] [--steps N]
                    [--batch N] [--device cuda|cpu] [--seed S] [--json OUT] [--save OUT]

MODE is one of
  none          plain training (the control);
  checkpoint    activation checkpointing of the model's blocks (torch.utils.checkpoint,
                non-reentrant: each block's activations are recomputed in the backward pass);
  save_on_cpu   torch.autograd.graph.save_on_cpu(pin_memory=True) around the forward pass;
  offload       activation offloading on a side stream into pinned host buffers, by
                saved-tensor hooks (OffloadHooks below): a saved activation is copied out
                on the side stream once the compute stream has made it, and copied back on
                the side stream when the backward pass asks for it.

On a GPU, --memory-bytes caps PyTorch's caching allocator with
torch.cuda.set_per_process_memory_fraction (bytes / the device's total), the budget a
deepum plan is given; a run that does not fit prints "out of memory at step N" and exits 3.
Every step prints "step N loss L time T ms" (bench/gpu/energy.py and summarize.py read
it), and at the end one "memory:" line with the peak of torch.cuda.mem_get_info's used
bytes over the steps and the allocator's peak reserved bytes (--json writes them too).

The tiny model (a few residual blocks on 16x16 images) runs on the CPU; the test
bench/gpu/test_alternatives.py checks there that every mode gives the control's losses
and parameters.
"""
import argparse
import json
import sys
import time

import torch
from torch import nn

MODES = ("none", "checkpoint", "save_on_cpu", "offload")


class TinyBlock(nn.Module):
    """A residual block: conv, batch norm, ReLU, conv, added back."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(torch.relu(self.bn(self.conv1(x))))


class TinyNet(nn.Module):
    def __init__(self, channels=8, blocks=3, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[TinyBlock(channels) for _ in range(blocks)])
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


def build(args, device):
    """(model, its blocks, optimizer, a function giving the step's loss)."""
    gen = torch.Generator().manual_seed(args.seed)
    if args.model == "tiny":
        model = TinyNet().to(device)
        blocks = list(model.blocks)
        x = torch.randn(args.batch or 4, 3, 16, 16, generator=gen).to(device)
        y = torch.randint(0, 10, (x.shape[0],), generator=gen).to(device)
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return model, blocks, opt, lambda: loss_fn(model(x), y)
    if args.model == "resnet50":
        import torchvision
        model = torchvision.models.resnet50().to(device)
        blocks = [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4)
                  for b in layer]
        x = torch.randn(args.batch or 64, 3, 224, 224, generator=gen).to(device)
        y = torch.randint(0, 1000, (x.shape[0],), generator=gen).to(device)
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return model, blocks, opt, lambda: loss_fn(model(x), y)
    # GPT-2 medium as examples/gpt2_train.py builds it.
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=24, n_embd=1024, n_head=16, n_positions=args.seq_len)
    model = GPT2LMHeadModel(config).to(device)
    blocks = list(model.transformer.h)
    tokens = torch.randint(0, config.vocab_size, (args.batch or 4, args.seq_len),
                           generator=gen).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, blocks, opt, lambda: model(tokens, labels=tokens).loss


def checkpoint_blocks(blocks):
    """Each block's forward recomputed in the backward pass instead of saving its inside."""
    from torch.utils.checkpoint import checkpoint
    for block in blocks:
        inner = block.forward

        def forward(*args, _inner=inner, **kwargs):
            return checkpoint(_inner, *args, use_reentrant=False, **kwargs)

        block.forward = forward


class OffloadHooks(torch.autograd.graph.saved_tensors_hooks):
    """Saved activations of at least MIN_BYTES go to pinned host buffers on a side stream.

    Why a side stream: the copy out overlaps the forward pass's later kernels; the side
    stream first waits for the compute stream, so the copy reads finished data, and the
    activation's GPU memory is only released (its tensor dropped) once the copy's event
    has completed, checked at every later pack. In the backward pass the copy back is
    issued on the side stream and the compute stream waits for it. Parameters stay: they
    are kept anyway. Small tensors stay: the copy's fixed cost outweighs their bytes.
    On the CPU (the test) the same path copies into a plain host buffer.
    """

    MIN_BYTES = 1 << 20

    def __init__(self, device, min_bytes=None):
        self.device = device
        self.min_bytes = self.MIN_BYTES if min_bytes is None else min_bytes
        self.cuda = device.type == "cuda"
        self.stream = torch.cuda.Stream(device) if self.cuda else None
        self.in_flight = []  # (event, GPU tensor kept alive until the copy is done)
        self.packed = 0
        super().__init__(self.pack, self.unpack)

    def _retire(self):
        self.in_flight = [(e, t) for e, t in self.in_flight if not e.query()]

    def pack(self, tensor):
        if isinstance(tensor, nn.Parameter) or \
                tensor.numel() * tensor.element_size() < self.min_bytes:
            return tensor
        self.packed += 1
        if not self.cuda:
            host = torch.empty_like(tensor, device="cpu")
            host.copy_(tensor)
            return (tensor.device, host, None)
        self._retire()
        host = torch.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout,
                           pin_memory=True)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            host.copy_(tensor, non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.stream)
        self.in_flight.append((done, tensor))
        return (tensor.device, host, done)

    def unpack(self, packed):
        if isinstance(packed, torch.Tensor):
            return packed
        device, host, done = packed
        if not self.cuda:
            return host.to(device)
        with torch.cuda.stream(self.stream):
            self.stream.wait_event(done)
            back = host.to(device, non_blocking=True)
        torch.cuda.current_stream(self.device).wait_stream(self.stream)
        # The compute stream now uses memory the side stream allocated.
        back.record_stream(torch.cuda.current_stream(self.device))
        return back

    def finish(self):
        """Every copy out done (the step's end): the kept GPU tensors can go."""
        if self.cuda:
            self.stream.synchronize()
        self.in_flight.clear()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("resnet50", "gpt2", "tiny"), default="tiny")
    p.add_argument("--mode", choices=MODES, default="none")
    p.add_argument("--memory-bytes", type=int,
                   help="cap PyTorch's allocator at this many bytes (GPU only)")
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--batch", type=int, default=0, help="0: the model's usual batch")
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--offload-min-bytes", type=int, help="offload: smallest tensor moved")
    p.add_argument("--json", help="write the steps and memory figures here")
    p.add_argument("--save", help="write the final parameters here (torch.save)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    device = torch.device(args.device)
    if args.steps < 1:
        print("alternatives.py: --steps must be at least 1", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    cuda = device.type == "cuda"
    if args.memory_bytes is not None:
        if not cuda:
            print("alternatives.py: --memory-bytes needs a CUDA device", file=sys.stderr)
            return 2
        total = torch.cuda.get_device_properties(device).total_memory
        if not 0 < args.memory_bytes <= total:
            print(f"alternatives.py: --memory-bytes {args.memory_bytes} is not within the "
                  f"device's {total} bytes", file=sys.stderr)
            return 2
        torch.cuda.set_per_process_memory_fraction(args.memory_bytes / total, device)
    if cuda:
        free0, total = torch.cuda.mem_get_info(device)
    model, blocks, opt, step_loss = build(args, device)
    hooks = None
    if args.mode == "checkpoint":
        checkpoint_blocks(blocks)
    elif args.mode == "offload":
        hooks = OffloadHooks(device, args.offload_min_bytes)

    steps, peak_used = [], 0
    oom = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    for step in range(args.steps):
        start = time.perf_counter()
        try:
            opt.zero_grad(set_to_none=False)
            if args.mode == "save_on_cpu":
                with torch.autograd.graph.save_on_cpu(pin_memory=True):
                    loss = step_loss()
            elif hooks is not None:
                with hooks:
                    loss = step_loss()
            else:
                loss = step_loss()
            loss.backward()
            opt.step()
            if hooks is not None:
                hooks.finish()
            if cuda:
                torch.cuda.synchronize(device)
        except oom as e:
            if cuda and "out of memory" in str(e):
                print(f"alternatives.py: out of memory at step {step} under "
                      f"{args.memory_bytes} bytes ({args.model}, {args.mode})", flush=True)
                write_json(args, steps, None, "out of memory")
                return 3
            raise
        ms = 1e3 * (time.perf_counter() - start)
        if cuda:
            free, _ = torch.cuda.mem_get_info(device)
            peak_used = max(peak_used, total - free)
        steps.append({"step": step, "loss": loss.item(), "ms": ms})
        print(f"step {step} loss {loss.item():.4f} time {ms:.1f} ms", flush=True)
    memory = None
    if cuda:
        memory = {"used_before_bytes": total - free0, "peak_used_bytes": peak_used,
                  "peak_reserved_bytes": torch.cuda.max_memory_reserved(device),
                  "cap_bytes": args.memory_bytes}
        print(f"memory: peak used {peak_used} bytes (before the model {total - free0}), "
              f"peak reserved {memory['peak_reserved_bytes']}, cap {args.memory_bytes}")
    if hooks is not None:
        print(f"offload: {hooks.packed} saved tensors moved to the host")
    write_json(args, steps, memory, None, hooks.packed if hooks else None)
    if args.save:
        torch.save({k: v.detach().cpu() for k, v in model.named_parameters()}, args.save)
    return 0


def write_json(args, steps, memory, failure, packed=None):
    if not args.json:
        return
    with open(args.json, "w") as f:
        json.dump({"model": args.model, "mode": args.mode, "memory_bytes": args.memory_bytes,
                   "steps": steps, "memory": memory, "failure": failure,
                   "offloaded_tensors": packed}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
