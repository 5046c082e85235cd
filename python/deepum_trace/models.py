"""Workloads: a model, its optimizer, a batch generator and a loss.

Torchvision classification models by name, plus transformers built from torch.nn:
``bert-large`` (BERT-large encoder with a masked-LM head), ``gpt2-medium`` (GPT-2 medium
decoder with a causal-LM loss), ``bart-large`` (BART-large encoder-decoder, cross-attention,
sequence-to-sequence loss) and ``llama-1b`` (a Llama-shaped 1B decoder: grouped-query
attention, RMSNorm, SwiGLU, rotary positions) trained under bf16 autocast with fp32 master
weights, optionally with activation checkpointing. Torchvision models train with SGD +
momentum, the language models with AdamW, the usual recipes for each.
"""

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

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
    # What the loss calls instead of `model` when set: a DistributedDataParallel around it.
    wrapper: Optional[nn.Module] = None
    # Untraced steps before the traced ones. DDP rebuilds its gradient buckets in the
    # forward of its second step, so a wrapped model takes two.
    warmup_steps: int = 1
    # (role, label prefix) of state the step touches that is held outside the model and
    # its optimizer (DDP's gradient buckets); see capture.Recorder.
    held_state: Optional[Tuple[str, str]] = None

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


_FACTORIES = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.arange,
                        torch.rand, torch.randn, torch.randint, torch.tensor})


class meta_init(torch.overrides.TorchFunctionMode):
    """Build modules on the meta device: every tensor factory called inside makes a meta
    tensor, so a model's parameters and buffers have their shapes but no memory and no
    initialisation cost (a 1B-parameter model builds in a fraction of a second instead of
    a minute). For workloads traced with --compute meta, whose values do not matter."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FACTORIES:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


# -- torchvision ----------------------------------------------------------------------

def torchvision_names():
    import torchvision
    return sorted(torchvision.models.list_models(module=torchvision.models))


def torchvision_workload(name, image_size=None):
    import torchvision
    names = torchvision_names()
    if name not in names:
        raise ValueError(f"unknown model '{name}'. Known: {', '.join(TRANSFORMERS)}, "
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


# -- bf16 autocast ---------------------------------------------------------------------

# CUDA autocast's policy for the operators these models call (ATen's autocast_mode.cpp):
# matrix products run in bf16, numerically sensitive reductions and losses in fp32, the
# rest in whatever dtype their inputs have.
_LOWER_PRECISION = frozenset({
    F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm,
    torch.Tensor.bmm, torch.mm, torch.Tensor.mm, torch.addmm, torch.baddbmm,
})
_FP32 = frozenset({
    F.softmax, torch.softmax, torch.Tensor.softmax, F.log_softmax, torch.log_softmax,
    torch.Tensor.log_softmax, F.cross_entropy, F.nll_loss, F.layer_norm, torch.rsqrt,
    torch.Tensor.rsqrt, torch.pow, torch.Tensor.pow, torch.exp, torch.Tensor.exp,
})


class Bf16Autocast(torch.overrides.TorchFunctionMode):
    """torch.autocast("cuda", dtype=torch.bfloat16), written as a TorchFunctionMode.

    torch.autocast works per backend, and neither the CPU's policy (it differs from CUDA's)
    nor the meta device (it has none) gives the op sequence a GPU runs, so the policy is
    applied here, above autograd as autocast is: the casts are operators of the graph and
    their outputs are what backward saves. Parameters stay fp32 (the master weights);
    casts of leaf tensors that require grad are cached for the region, as autocast's are."""

    depth = 0

    def __init__(self):
        super().__init__()
        self.cache = {}

    def __enter__(self):
        Bf16Autocast.depth += 1
        return super().__enter__()

    def __exit__(self, *exc):
        Bf16Autocast.depth -= 1
        self.cache.clear()
        return super().__exit__(*exc)

    def _cast(self, value, dtype, only_from):
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast(v, dtype, only_from) for v in value)
        if not isinstance(value, torch.Tensor) or not value.is_floating_point() \
                or value.dtype == dtype or (only_from and value.dtype not in only_from):
            return value
        if value.is_leaf and value.requires_grad:
            key = (id(value), dtype)
            if key not in self.cache:
                self.cache[key] = (value, value.to(dtype))
            return self.cache[key][1]
        return value.to(dtype)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LOWER_PRECISION:
            args = self._cast(args, torch.bfloat16, None)
            kwargs = {k: self._cast(v, torch.bfloat16, None) for k, v in kwargs.items()}
        elif func in _FP32:
            low = (torch.bfloat16, torch.float16)
            args = self._cast(args, torch.float32, low)
            kwargs = {k: self._cast(v, torch.float32, low) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def bf16_autocast():
    """An autocast region; nested regions are the outer one."""
    return contextlib.nullcontext() if Bf16Autocast.depth else Bf16Autocast()


# -- encoder-decoder: BART ---------------------------------------------------------------

# layers: per stack (12 encoder + 12 decoder layers). BART-large: dropout 0.1, no attention
# or activation dropout, no embedding scaling.
BART_LARGE = TransformerConfig(layers=12, hidden=1024, heads=16, ffn=4096, vocab=50265,
                               max_positions=1024)


class BartAttention(nn.Module):
    """Multi-head attention with separate projections; self-attention (optionally causal)
    or cross-attention when given the encoder's output."""

    def __init__(self, cfg, causal=False):
        super().__init__()
        self.heads = cfg.heads
        self.causal = causal
        self.q = nn.Linear(cfg.hidden, cfg.hidden)
        self.k = nn.Linear(cfg.hidden, cfg.hidden)
        self.v = nn.Linear(cfg.hidden, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, memory=None, future=None):
        source = x if memory is None else memory
        b, s, h = x.shape
        t = source.shape[1]
        d = h // self.heads
        # Heads made contiguous explicitly, as in SelfAttention: the op sequence must not
        # depend on the batch size.
        q = self.q(x).view(b, s, self.heads, d).transpose(1, 2).contiguous()
        k, v = (p(source).view(b, t, self.heads, d).transpose(1, 2).contiguous()
                for p in (self.k, self.v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        if self.causal:
            scores = scores.masked_fill(future[:s, :s], float("-inf"))
        context = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, h)
        return self.drop(self.out(context))


class BartEncoderLayer(nn.Module):
    """Post-LN: self-attention, then the feed-forward network."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = BartAttention(cfg)
        self.ln1 = nn.LayerNorm(cfg.hidden)
        self.mlp = MLP(cfg, "none")
        self.ln2 = nn.LayerNorm(cfg.hidden)

    def forward(self, x):
        x = self.ln1(x + self.self_attn(x))
        return self.ln2(x + self.mlp(x))


class BartDecoderLayer(nn.Module):
    """Post-LN: causal self-attention, cross-attention over the encoder's output, then the
    feed-forward network."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = BartAttention(cfg, causal=True)
        self.ln1 = nn.LayerNorm(cfg.hidden)
        self.cross_attn = BartAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.hidden)
        self.mlp = MLP(cfg, "none")
        self.ln3 = nn.LayerNorm(cfg.hidden)

    def forward(self, x, memory, future):
        x = self.ln1(x + self.self_attn(x, future=future))
        x = self.ln2(x + self.cross_attn(x, memory=memory))
        return self.ln3(x + self.mlp(x))


class Bart(nn.Module):
    """BART encoder-decoder: token embeddings shared by both stacks and the LM head, learned
    positions per stack, a layer norm on each stack's embeddings, a final logits bias."""

    def __init__(self, cfg):
        super().__init__()
        self.shared = nn.Embedding(cfg.vocab, cfg.hidden)
        self.encoder_positions = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.decoder_positions = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.encoder_ln = nn.LayerNorm(cfg.hidden)
        self.decoder_ln = nn.LayerNorm(cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(BartEncoderLayer(cfg) for _ in range(cfg.layers))
        self.decoder = nn.ModuleList(BartDecoderLayer(cfg) for _ in range(cfg.layers))
        self.register_buffer("final_logits_bias", torch.zeros(cfg.vocab), persistent=False)
        mask = torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.bool).triu(1)
        self.register_buffer("future", mask, persistent=False)

    def embed(self, ids, positions, ln):
        where = torch.arange(ids.shape[1], device=ids.device)
        return self.drop(ln(self.shared(ids) + positions(where)))

    def forward(self, source_ids, decoder_ids):
        memory = self.embed(source_ids, self.encoder_positions, self.encoder_ln)
        for layer in self.encoder:
            memory = layer(memory)
        x = self.embed(decoder_ids, self.decoder_positions, self.decoder_ln)
        for layer in self.decoder:
            x = layer(x, memory, self.future)
        return F.linear(x, self.shared.weight, self.final_logits_bias)


# -- decoder-only LLM: Llama shape -------------------------------------------------------

@dataclass(frozen=True)
class LlamaConfig:
    layers: int
    hidden: int
    heads: int          # query heads
    kv_heads: int       # key/value heads; grouped-query attention when fewer than heads
    ffn: int
    vocab: int
    max_positions: int
    rope_theta: float = 10000.0
    eps: float = 1e-5


# The Llama 3.2 1B layout (16 layers, d=2048, 32 query / 8 KV heads, SwiGLU 8192, tied
# embeddings) with Llama 2's 32000-token vocabulary: 1.04B parameters.
LLAMA_1B = LlamaConfig(layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192, vocab=32000,
                       max_positions=2048)


class RMSNorm(nn.Module):
    """Root-mean-square norm, computed in fp32 whatever the input's dtype."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class GqaAttention(nn.Module):
    """Causal attention with rotary positions; kv_heads key/value heads, each shared by
    heads / kv_heads query heads."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.hidden % cfg.heads or cfg.heads % cfg.kv_heads:
            raise ValueError("hidden must divide into heads, heads into kv_heads")
        self.heads, self.kv_heads = cfg.heads, cfg.kv_heads
        self.head_dim = cfg.hidden // cfg.heads
        self.q = nn.Linear(cfg.hidden, cfg.heads * self.head_dim, bias=False)
        self.k = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(cfg.heads * self.head_dim, cfg.hidden, bias=False)

    def forward(self, x, cos, sin, future):
        b, s, _ = x.shape
        d, kv, group = self.head_dim, self.kv_heads, self.heads // self.kv_heads
        q = self.q(x).view(b, s, self.heads, d).transpose(1, 2)
        k = self.k(x).view(b, s, kv, d).transpose(1, 2)
        v = self.v(x).view(b, s, kv, d).transpose(1, 2)
        cos, sin = cos[:s].to(q.dtype), sin[:s].to(q.dtype)
        # The softmax scale 1/sqrt(d) is folded into the queries' rotation, an exact
        # rewrite: dividing the scores by a Python float would save a wrapped scalar for
        # backward, which torch 1.13's non-reentrant checkpoint cannot pack.
        q = q * (cos / math.sqrt(d)) + _rotate_half(q) * (sin / math.sqrt(d))
        k = k * cos + _rotate_half(k) * sin
        # Each key/value head serves a group of query heads.
        k = k[:, :, None].expand(b, kv, group, s, d).reshape(b, self.heads, s, d)
        v = v[:, :, None].expand(b, kv, group, s, d).reshape(b, self.heads, s, d)
        scores = (q @ k.transpose(-2, -1)).masked_fill(future[:s, :s], float("-inf"))
        context = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, self.heads * d)
        return self.o(context)


class SwiGLU(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.up = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.down = nn.Linear(cfg.ffn, cfg.hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class LlamaBlock(nn.Module):
    """Pre-norm decoder block: RMSNorm, attention, RMSNorm, SwiGLU; no biases, no dropout."""

    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.hidden, cfg.eps)
        self.attn = GqaAttention(cfg)
        self.mlp_norm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = SwiGLU(cfg)

    def forward(self, x, cos, sin, future):
        x = x + self.attn(self.attn_norm(x), cos, sin, future)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """Llama-shaped decoder; the LM head is tied to the token embeddings.

    checkpointing: each block keeps only its input for backward and runs again there
    (torch.utils.checkpoint, non-reentrant). precision: the context the forward pass runs
    under; a block that runs again in backward enters it again, as autocast must be."""

    def __init__(self, cfg, checkpointing=False, precision=contextlib.nullcontext):
        super().__init__()
        self.checkpointing = checkpointing
        self.precision = precision
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.blocks = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps)
        d = cfg.hidden // cfg.heads
        inverse = 1.0 / cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
        angles = torch.outer(torch.arange(cfg.max_positions, dtype=torch.float32), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        mask = torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.bool).triu(1)
        self.register_buffer("future", mask, persistent=False)

    def _block(self, block, x):
        with self.precision():
            return block(x, self.cos, self.sin, self.future)

    def forward(self, ids):
        import torch.utils.checkpoint
        x = self.embed(ids)
        for block in self.blocks:
            if self.checkpointing and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(self._block, block, x, use_reentrant=False,
                                                      preserve_rng_state=False)
            else:
                x = self._block(block, x)
        return F.linear(self.norm(x), self.embed.weight)


def bart_workload(cfg=BART_LARGE, seq_len=None, name="bart-large"):
    """Sequence-to-sequence training (translation-like): seq_len source and target tokens."""
    seq_len = seq_len or cfg.max_positions
    _check_seq_len(name, seq_len, cfg)
    model = Bart(cfg).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01, foreach=False)

    def make_batch(batch):
        source = torch.randint(0, cfg.vocab, (batch, seq_len))
        target = torch.randint(0, cfg.vocab, (batch, seq_len + 1))
        return {"input_ids": source, "decoder_input_ids": target[:, :-1].contiguous(),
                "labels": target[:, 1:].contiguous()}

    def loss(model, data):
        logits = model(data["input_ids"], data["decoder_input_ids"])
        return F.cross_entropy(logits.view(-1, cfg.vocab), data["labels"].view(-1))

    return Workload(name, model, optimizer, make_batch, loss, sequence_length=seq_len,
                    trace_batches=(2, 3),
                    description=f"BART encoder-decoder {cfg.layers}+{cfg.layers}x{cfg.hidden}, "
                    f"{cfg.heads} heads, FFN {cfg.ffn}, vocab {cfg.vocab}, cross-attention, "
                    f"{seq_len} source and {seq_len} target tokens, tied embeddings, AdamW")


def llama_workload(cfg=LLAMA_1B, seq_len=None, checkpointing=False, name="llama-1b"):
    """Causal-LM training under bf16 autocast with fp32 master weights and AdamW."""
    seq_len = seq_len or cfg.max_positions
    _check_seq_len(name, seq_len, cfg)
    model = Llama(cfg, checkpointing, precision=bf16_autocast).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95),
                                  weight_decay=0.1, foreach=False)

    def make_batch(batch):
        tokens = torch.randint(0, cfg.vocab, (batch, seq_len + 1))
        return {"input_ids": tokens[:, :-1].contiguous(), "labels": tokens[:, 1:].contiguous()}

    def loss(model, data):
        with bf16_autocast():
            logits = model(data["input_ids"])
            return F.cross_entropy(logits.view(-1, cfg.vocab), data["labels"].view(-1))

    return Workload(name, model, optimizer, make_batch, loss, sequence_length=seq_len,
                    trace_batches=(2, 3),
                    description=f"Llama-shaped decoder {cfg.layers}x{cfg.hidden}, {cfg.heads} "
                    f"query / {cfg.kv_heads} KV heads (GQA), SwiGLU {cfg.ffn}, RMSNorm, rotary, "
                    f"vocab {cfg.vocab}, tied embeddings, causal-LM loss, bf16 autocast with "
                    f"fp32 master weights, AdamW"
                    + (", activation checkpointing per block" if checkpointing else ""))


TRANSFORMERS = ("bert-large", "gpt2-medium", "bart-large", "llama-1b")


def build_workload(name, seq_len=None, image_size=None, seed=0, checkpointing=False):
    """The workload called name, with seeded initial weights."""
    torch.manual_seed(seed)
    if checkpointing and name != "llama-1b":
        raise ValueError(f"--checkpointing applies to llama-1b, not {name}")
    if name == "bert-large":
        return bert_workload(seq_len=seq_len)
    if name == "gpt2-medium":
        return gpt2_workload(seq_len=seq_len)
    if name == "bart-large":
        return bart_workload(seq_len=seq_len)
    if name == "llama-1b":
        return llama_workload(seq_len=seq_len, checkpointing=checkpointing)
    if seq_len:
        raise ValueError(f"--seq-len applies to {', '.join(TRANSFORMERS)}, not {name}")
    return torchvision_workload(name, image_size)
