"""Zoo model builders: name -> builder(size) -> Built(model, inputs, loss_fn).

Every model is built on CPU from a config or plain torch with random weights (seeded by the
caller): nothing is downloaded. `size` is "small" (the tests: a few hundred nodes at most, fast)
or "large" (the benchmark: more layers and wider). Run one with `forward(built)`: the forward
under `aw.track(model)`, then `loss_fn(output)`, a real floating scalar.

The transformers models are imported lazily, so the plain-torch ones work without it. Attention
implementations: GPT-2 and T5 "eager" (the hand-written softmax attention), BERT and Llama "sdpa"
(`F.scaled_dot_product_attention`): both paths are covered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a hub, even by accident

SIZES = ("small", "large")


@dataclass
class Built:
    model: nn.Module
    #: keyword arguments of `model(**inputs)`
    inputs: dict[str, Any]
    #: the model's output -> a real floating scalar loss
    loss_fn: Callable[[Any], torch.Tensor]


def forward(built: Built, *, track: bool = True) -> torch.Tensor:
    """The loss of one forward, every node stamped with its module path when `track`."""
    if track:
        with aw.track(built.model):
            out = built.model(**built.inputs)
    else:
        out = built.model(**built.inputs)
    return built.loss_fn(out)


def params(model: nn.Module) -> list[torch.Tensor]:
    return [p for p in model.parameters() if p.requires_grad]


class WithLoss(nn.Module):
    """`built.model` and its loss as one module taking the inputs positionally (in
    `built.inputs` order) and returning the loss tensor: for tools that trace a forward
    themselves (torchlens in the benchmark)."""

    def __init__(self, built: Built) -> None:
        super().__init__()
        self.model = built.model
        self.keys = list(built.inputs)
        self.loss_fn = built.loss_fn

    def forward(self, *args: Any) -> torch.Tensor:
        return self.loss_fn(self.model(**dict(zip(self.keys, args))))


def _pick(size: str, small: Any, large: Any) -> Any:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    return small if size == "small" else large


def _lm_inputs(vocab: int, batch: int, seq: int) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, vocab, (batch, seq))
    return {"input_ids": ids, "labels": ids.clone()}


def _hf_loss(out: Any) -> torch.Tensor:
    return out.loss


def _transformers() -> Any:
    """The transformers package, its config-validation chatter silenced (random tiny configs
    trip warnings about token ids and the default loss that say nothing here)."""
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


# ------------------------------------------------------------------------------- transformers
VOCAB = 96


def gpt2(size: str = "small") -> Built:
    tf = _transformers()
    layers, width, seq = _pick(size, (2, 32, 8), (6, 64, 32))
    cfg = tf.GPT2Config(
        vocab_size=VOCAB,
        n_positions=64,
        n_embd=width,
        n_layer=layers,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
    )
    return Built(tf.GPT2LMHeadModel(cfg), _lm_inputs(VOCAB, 2, seq), _hf_loss)


def bert(size: str = "small") -> Built:
    tf = _transformers()
    layers, width, seq = _pick(size, (2, 32, 8), (6, 64, 32))
    cfg = tf.BertConfig(
        vocab_size=VOCAB,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * width,
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )
    inputs = _lm_inputs(VOCAB, 2, seq)
    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    inputs["attention_mask"][1, -2:] = 0  # padding: a real mask reaches the attention
    return Built(tf.BertForMaskedLM(cfg), inputs, _hf_loss)


def t5(size: str = "small") -> Built:
    tf = _transformers()
    layers, width, seq = _pick(size, (2, 32, 8), (4, 64, 32))
    cfg = tf.T5Config(
        vocab_size=VOCAB,
        d_model=width,
        d_kv=width // 2,
        d_ff=2 * width,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        attn_implementation="eager",
    )
    ids = torch.randint(1, VOCAB, (2, seq))
    labels = torch.randint(1, VOCAB, (2, seq // 2))
    return Built(tf.T5ForConditionalGeneration(cfg), {"input_ids": ids, "labels": labels}, _hf_loss)


def llama(size: str = "small") -> Built:
    tf = _transformers()
    layers, width, seq = _pick(size, (2, 32, 8), (6, 64, 32))
    cfg = tf.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=width,
        intermediate_size=2 * width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention: repeat_kv in the graph
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )
    return Built(tf.LlamaForCausalLM(cfg), _lm_inputs(VOCAB, 2, seq), _hf_loss)


# ------------------------------------------------------------------------------- plain torch
class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.down is None else self.down(x)
        return F.relu(y + skip)


class ResNet(nn.Module):
    def __init__(self, widths: tuple[int, ...], blocks: int, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()
        )
        stages, c = [], widths[0]
        for i, w in enumerate(widths):
            for b in range(blocks):
                stages.append(BasicBlock(c, w, 2 if (b == 0 and i > 0) else 1))
                c = w
        self.layers = nn.Sequential(*stages)
        self.head = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layers(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


def _ce(labels: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda logits: F.cross_entropy(logits.float(), labels)


def resnet(size: str = "small") -> Built:
    widths, blocks, hw = _pick(size, ((4, 8), 1, 8), ((8, 16, 32), 2, 16))
    x = torch.randn(2, 3, hw, hw)
    return Built(ResNet(widths, blocks), {"x": x}, _ce(torch.tensor([1, 7])))


class Attention(nn.Module):
    """Multi-head self-attention by hand: qkv projection, softmax(q k^T / sqrt(d)) v."""

    def __init__(self, dim: int, heads: int, sdpa: bool = False, causal: bool = False) -> None:
        super().__init__()
        self.heads, self.sdpa, self.causal = heads, sdpa, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
            y = att.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """A pre-norm Transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, dim: int, heads: int, sdpa: bool = False, causal: bool = False) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, sdpa, causal)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, dim: int, depth: int, patch: int, image: int, classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, 2) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


def vit(size: str = "small") -> Built:
    dim, depth, image = _pick(size, (32, 2, 8), (64, 6, 16))
    x = torch.randn(2, 3, image, image)
    return Built(ViT(dim, depth, 4, image), {"x": x}, _ce(torch.tensor([3, 5])))


class TinyGPT(nn.Module):
    """A causal decoder in plain torch whose attention is `F.scaled_dot_product_attention`."""

    def __init__(self, vocab: int, dim: int, depth: int, seq: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, 4, sdpa=True, causal=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        return self.head(self.norm(self.blocks(x)))


def _next_token_loss(ids: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten())

    return loss


def sdpa(size: str = "small") -> Built:
    dim, depth, seq = _pick(size, (32, 2, 8), (64, 6, 32))
    ids = torch.randint(0, VOCAB, (2, seq))
    return Built(TinyGPT(VOCAB, dim, depth, seq), {"ids": ids}, _next_token_loss(ids))


class Autocast(nn.Module):
    """Runs the wrapped model under CPU autocast to bfloat16 (weights stay float32: the graph
    holds the casts `ToCopyBackward0` between float32 leaves and bf16 matmuls)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner(*args, **kwargs)


def autocast_bf16(size: str = "small") -> Built:
    dim, depth, seq = _pick(size, (32, 2, 8), (64, 6, 32))
    ids = torch.randint(0, VOCAB, (2, seq))
    model = Autocast(TinyGPT(VOCAB, dim, depth, seq))
    return Built(model, {"ids": ids}, _next_token_loss(ids))


class LSTMTagger(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, layers, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * dim, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(self.embed(ids))
        return self.head(y)


def lstm(size: str = "small") -> Built:
    dim, layers, seq = _pick(size, (16, 2, 6), (64, 2, 32))
    ids = torch.randint(0, VOCAB, (2, seq))
    tags = torch.randint(0, 5, (2 * seq,))
    return Built(
        LSTMTagger(VOCAB, dim, layers),
        {"ids": ids},
        lambda y: F.cross_entropy(y.flatten(0, 1), tags),
    )


class Checkpointed(nn.Module):
    """Transformer blocks each wrapped in non-reentrant activation checkpointing."""

    def __init__(self, dim: int, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, 2) for _ in range(depth)])
        self.head = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x)


def checkpointed(size: str = "small") -> Built:
    dim, depth, seq = _pick(size, (32, 2, 8), (64, 6, 32))
    x = torch.randn(2, seq, dim)
    return Built(Checkpointed(dim, depth), {"x": x}, lambda y: y.pow(2).mean())


#: name -> builder(size): every zoo model, in the order tests and the benchmark list them.
MODELS: dict[str, Callable[[str], Built]] = {
    "gpt2": gpt2,
    "bert": bert,
    "t5": t5,
    "llama": llama,
    "resnet": resnet,
    "vit": vit,
    "sdpa": sdpa,
    "autocast_bf16": autocast_bf16,
    "lstm": lstm,
    "checkpoint": checkpointed,
}
#: the models that need the `transformers` package
TRANSFORMERS = ("gpt2", "bert", "t5", "llama")
