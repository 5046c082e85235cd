"""Workloads: a model, its optimizer, a batch generator and a loss.

Torchvision classification models by name, plus two transformers built from torch.nn:
``bert-large`` (BERT-large encoder with a masked-LM head) and ``gpt2-medium`` (GPT-2
medium decoder with a causal-LM loss). Torchvision models train with SGD + momentum, the
language models with AdamW, the usual recipes for each.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Workload:
    name: str
    model: nn.Module
    optimizer: torch.optim.Optimizer
    make_batch: Callable[[int], Dict[str, torch.Tensor]]   # batch size -> named inputs
    loss: Callable[[nn.Module, Dict[str, torch.Tensor]], torch.Tensor]
    sequence_length: int = 0
    # Batch sizes traced for real; other sizes are extrapolated from these two. Not 1:
    # PyTorch's stride logic treats size-1 dimensions specially (a reshape that copies at
    # batch 2 can be a view at batch 1), so batch 1 may run a different op sequence.
    trace_batches: Tuple[int, int] = (2, 4)
    # Optimizer state entries PyTorch keeps on the host even when training on a GPU.
    host_state: frozenset = field(default_factory=lambda: frozenset({"step"}))
    description: str = ""
    device: str = "cpu"

    def to(self, device):
        """Run the workload on another torch device. "meta" executes every operator for its
        shapes only: no arithmetic and no memory, so models too large to train on this
        machine can still be traced. Batches are generated on the CPU (seeded) and moved."""
        if device != self.device:
            if self.optimizer.state:
                raise RuntimeError("move a workload before its first step")
            # Module.to() may replace Parameter objects (CPU -> meta does), so the optimizer
            # is rebuilt over the moved parameters with the same hyperparameters.
            self.model.to(device)
            self.optimizer = type(self.optimizer)(self.model.parameters(),
                                                  **self.optimizer.defaults)
            generate = self.make_batch
            self.make_batch = lambda batch: {k: v.to(device) for k, v in generate(batch).items()}
            self.device = device
        return self

    @property
    def parameter_count(self):
        return sum(p.numel() for p in self.model.parameters())


# -- torchvision ----------------------------------------------------------------------

def torchvision_names():
    import torchvision
    return sorted(torchvision.models.list_models(module=torchvision.models))


def torchvision_workload(name, image_size=None):
    import torchvision
    names = torchvision_names()
    if name not in names:
        raise ValueError(f"unknown model '{name}'. Known: bert-large, gpt2-medium, "
                         f"and torchvision classification models: {', '.join(names)}")
    model = torchvision.models.get_model(name, weights=None)
    model.train()
    size = image_size or (299 if name == "inception_v3" else 224)
    # Every torchvision classifier (ViT included, as in ViT fine-tuning) trains with the
    # ImageNet recipe: SGD, momentum 0.9, weight decay 1e-4. One momentum buffer per parameter.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4,
                                foreach=False)

    def make_batch(batch):
        return {"images": torch.randn(batch, 3, size, size),
                "labels": torch.randint(0, 1000, (batch,))}

    def loss(model, data):
        out = model(data["images"])
        if isinstance(out, tuple):   # inception/googlenet: main and auxiliary logits
            return sum(F.cross_entropy(o, data["labels"]) for o in out if o is not None)
        return F.cross_entropy(out, data["labels"])

    return Workload(name, model, optimizer, make_batch, loss,
                    description=f"torchvision {name}, {size}x{size} images, SGD momentum 0.9")


# -- transformers ---------------------------------------------------------------------

@dataclass(frozen=True)
class TransformerConfig:
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    dropout: float = 0.1


BERT_LARGE = TransformerConfig(layers=24, hidden=1024, heads=16, ffn=4096, vocab=30522,
                               max_positions=512)
GPT2_MEDIUM = TransformerConfig(layers=24, hidden=1024, heads=16, ffn=4096, vocab=50257,
                                max_positions=1024)


class SelfAttention(nn.Module):
    def __init__(self, cfg, causal):
        super().__init__()
        self.heads = cfg.heads
        self.causal = causal
        if causal:   # GPT-2: one fused QKV projection
            self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
            mask = torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.bool).triu(1)
            self.register_buffer("future", mask, persistent=False)
        else:        # BERT: separate query, key and value projections
            self.q = nn.Linear(cfg.hidden, cfg.hidden)
            self.k = nn.Linear(cfg.hidden, cfg.hidden)
            self.v = nn.Linear(cfg.hidden, cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.attn_drop = nn.Dropout(cfg.dropout)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        if self.causal:
            q, k, v = self.qkv(x).split(h, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        # Heads made contiguous explicitly: matmul would copy them anyway for batch > 1, but
        # not for batch 1, and the op sequence must not depend on the batch size.
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2).contiguous() for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        if self.causal:
            scores = scores.masked_fill(self.future[:s, :s], float("-inf"))
        probs = self.attn_drop(scores.softmax(dim=-1))
        context = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.resid_drop(self.proj(context))


class MLP(nn.Module):
    def __init__(self, cfg, approximate):
        super().__init__()
        self.fc1 = nn.Linear(cfg.hidden, cfg.ffn)
        self.fc2 = nn.Linear(cfg.ffn, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.approximate = approximate

    def forward(self, x):
        return self.drop(self.fc2(F.gelu(self.fc1(x), approximate=self.approximate)))


class BertLayer(nn.Module):
    """Post-LN encoder layer."""

    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg, causal=False)
        self.ln1 = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.mlp = MLP(cfg, "none")
        self.ln2 = nn.LayerNorm(cfg.hidden, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class Bert(nn.Module):
    """BERT encoder with the masked-LM head; the decoder is tied to the word embeddings."""

    def __init__(self, cfg):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab, cfg.hidden)
        self.position = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.token_type = nn.Embedding(2, cfg.hidden)
        self.register_buffer("position_ids", torch.arange(cfg.max_positions), persistent=False)
        self.ln = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.drop = nn.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.hidden, cfg.hidden)
        self.head_ln = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(cfg.vocab))

    def forward(self, ids, token_types):
        s = ids.shape[1]
        x = self.word(ids) + self.position(self.position_ids[:s]) + self.token_type(token_types)
        x = self.drop(self.ln(x))
        for layer in self.layers:
            x = layer(x)
        x = self.head_ln(F.gelu(self.head(x)))
        return F.linear(x, self.word.weight, self.decoder_bias)


class GptBlock(nn.Module):
    """Pre-LN decoder block."""

    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.hidden)
        self.attn = SelfAttention(cfg, causal=True)
        self.ln2 = nn.LayerNorm(cfg.hidden)
        self.mlp = MLP(cfg, "tanh")

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt2(nn.Module):
    """GPT-2 decoder; the LM head is tied to the token embeddings."""

    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(GptBlock(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def _check_seq_len(name, seq_len, cfg):
    if not 1 <= seq_len <= cfg.max_positions:
        raise ValueError(f"{name}: --seq-len must be in 1..{cfg.max_positions}, got {seq_len}")


def bert_workload(cfg=BERT_LARGE, seq_len=None, name="bert-large"):
    seq_len = seq_len or cfg.max_positions
    _check_seq_len(name, seq_len, cfg)
    model = Bert(cfg).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, foreach=False)

    def make_batch(batch):
        ids = torch.randint(0, cfg.vocab, (batch, seq_len))
        # Masked-LM targets: about 15% of the positions, the rest ignored (-100). The loss
        # still runs over every position, as BERT's MLM head does, so shapes are static.
        labels = torch.where(torch.rand(batch, seq_len) < 0.15, ids, torch.full_like(ids, -100))
        return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "labels": labels}

    def loss(model, data):
        logits = model(data["input_ids"], data["token_type_ids"])
        return F.cross_entropy(logits.view(-1, cfg.vocab), data["labels"].view(-1),
                               ignore_index=-100)

    return Workload(name, model, optimizer, make_batch, loss, sequence_length=seq_len,
                    trace_batches=(2, 3),
                    description=f"BERT encoder {cfg.layers}x{cfg.hidden}, {cfg.heads} heads, "
                    f"FFN {cfg.ffn}, vocab {cfg.vocab}, masked-LM loss, AdamW")


def gpt2_workload(cfg=GPT2_MEDIUM, seq_len=None, name="gpt2-medium"):
    seq_len = seq_len or cfg.max_positions
    _check_seq_len(name, seq_len, cfg)
    model = Gpt2(cfg).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, foreach=False)

    def make_batch(batch):
        tokens = torch.randint(0, cfg.vocab, (batch, seq_len + 1))
        return {"input_ids": tokens[:, :-1].contiguous(), "labels": tokens[:, 1:].contiguous()}

    def loss(model, data):
        logits = model(data["input_ids"])
        return F.cross_entropy(logits.view(-1, cfg.vocab), data["labels"].view(-1))

    return Workload(name, model, optimizer, make_batch, loss, sequence_length=seq_len,
                    trace_batches=(2, 3),
                    description=f"GPT-2 decoder {cfg.layers}x{cfg.hidden}, {cfg.heads} heads, "
                    f"FFN {cfg.ffn}, vocab {cfg.vocab}, causal-LM loss, tied embeddings, AdamW")


def build_workload(name, seq_len=None, image_size=None, seed=0):
    """The workload called name, with seeded initial weights."""
    torch.manual_seed(seed)
    if name == "bert-large":
        return bert_workload(seq_len=seq_len)
    if name == "gpt2-medium":
        return gpt2_workload(seq_len=seq_len)
    if seq_len:
        raise ValueError(f"--seq-len applies to bert-large and gpt2-medium, not {name}")
    return torchvision_workload(name, image_size)
