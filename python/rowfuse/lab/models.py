"""The lab's models: what a stock compiler does with blocks rowfuse does not take.

Each factory returns ``(module, example_input)`` with weights from a fixed seed (so
``python -m rowfuse.export rowfuse.lab.models:FACTORY`` works too). ``make_input`` draws a
fresh input of the model's shape from a given seed; ``contraction_lengths`` lists the
length of every fp32 dot product on the longest path from input to output, which the
numerics tolerance is derived from (rowfuse.lab.numerics).

    cnn               two conv-ReLU-maxpool stages and a linear head, [8, 3, 32, 32] -> [8, 10]
    attention         single-head scaled-dot-product attention, [64, 64] -> [64, 64]
    attention_causal  the same with a causal mask (additive, -inf above the diagonal)
    gru               a GRU cell as matmuls + sigmoid/tanh, unrolled over 4 steps,
                      [64, 4, 32] -> [64, 4, 64] (every step's hidden state)
"""

from __future__ import annotations

import math

import torch
from torch import nn

CNN_BATCH = 8
SEQ = 64
WIDTH = 64
GRU_BATCH = 64
GRU_STEPS = 4
GRU_INPUT = 32
GRU_HIDDEN = 64


class SmallCNN(nn.Module):
    """conv(3->16, 3x3) ReLU maxpool(2), conv(16->32, 3x3) ReLU maxpool(2), linear(2048->10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(torch.flatten(x, 1))


class Attention(nn.Module):
    """softmax(Q K^T / sqrt(d) [+ mask]) V, then an output projection; Q, K, V = x W."""

    def __init__(self, causal: bool):
        super().__init__()
        self.q = nn.Linear(WIDTH, WIDTH)
        self.k = nn.Linear(WIDTH, WIDTH)
        self.v = nn.Linear(WIDTH, WIDTH)
        self.o = nn.Linear(WIDTH, WIDTH)
        self.causal = causal
        if causal:
            mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
            self.register_buffer("mask", mask)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(0, 1) * (1.0 / math.sqrt(WIDTH))
        if self.causal:
            scores = scores + self.mask
        return self.o(torch.softmax(scores, dim=-1) @ v)


class GRU(nn.Module):
    """GRU (PyTorch's gate equations) written out, h_0 = 0, unrolled over the steps:

    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)     z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn))  h' = (1 - z) * n + z * h

    With h_0 = 0 the first step's hidden terms are the biases alone, so no zeros tensor
    enters the graph. Batch rows are independent; the steps are sequential."""

    def __init__(self):
        super().__init__()
        self.xr = nn.Linear(GRU_INPUT, GRU_HIDDEN)
        self.xz = nn.Linear(GRU_INPUT, GRU_HIDDEN)
        self.xn = nn.Linear(GRU_INPUT, GRU_HIDDEN)
        self.hr = nn.Linear(GRU_HIDDEN, GRU_HIDDEN)
        self.hz = nn.Linear(GRU_HIDDEN, GRU_HIDDEN)
        self.hn = nn.Linear(GRU_HIDDEN, GRU_HIDDEN)

    @staticmethod
    def _hidden(layer, h):
        return layer.bias if h is None else layer(h)

    def forward(self, x):
        h = None
        states = []
        for t in range(GRU_STEPS):
            xt = x[:, t, :]
            r = torch.sigmoid(self.xr(xt) + self._hidden(self.hr, h))
            z = torch.sigmoid(self.xz(xt) + self._hidden(self.hz, h))
            n = torch.tanh(self.xn(xt) + r * self._hidden(self.hn, h))
            h = (1.0 - z) * n if h is None else (1.0 - z) * n + z * h
            states.append(h)
        return torch.stack(states, dim=1)


def _seeded(cls, *args):
    torch.manual_seed(0)
    return cls(*args).float().eval()


INPUT_SHAPES = {
    "cnn": (CNN_BATCH, 3, 32, 32),
    "attention": (SEQ, WIDTH),
    "attention_causal": (SEQ, WIDTH),
    "gru": (GRU_BATCH, GRU_STEPS, GRU_INPUT),
}

MODELS = list(INPUT_SHAPES)


def make_input(name: str, seed: int, dtype=torch.float32) -> torch.Tensor:
    """A fresh standard-normal input for model `name` from `seed`."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(INPUT_SHAPES[name], generator=gen, dtype=torch.float64).to(dtype)


def build(name: str) -> nn.Module:
    """The model `name` with its fixed-seed weights, fp32, eval mode."""
    if name == "cnn":
        return _seeded(SmallCNN)
    if name == "attention":
        return _seeded(Attention, False)
    if name == "attention_causal":
        return _seeded(Attention, True)
    if name == "gru":
        return _seeded(GRU)
    raise KeyError(f"unknown lab model '{name}' (known: {', '.join(MODELS)})")


def contraction_lengths(name: str) -> list[int]:
    """Lengths of the fp32 dot products on the longest input-to-output path."""
    if name == "cnn":
        return [3 * 9, 16 * 9, 32 * 8 * 8]
    if name in ("attention", "attention_causal"):
        return [WIDTH, WIDTH, SEQ, WIDTH]  # projection, scores, P @ V, output projection
    if name == "gru":
        return [GRU_INPUT] + [GRU_HIDDEN] * (GRU_STEPS - 1)
    raise KeyError(name)


def cnn():
    return build("cnn"), make_input("cnn", 1)


def attention():
    return build("attention"), make_input("attention", 1)


def attention_causal():
    return build("attention_causal"), make_input("attention_causal", 1)


def gru():
    return build("gru"), make_input("gru", 1)
