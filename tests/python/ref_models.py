"""PyTorch modules for the CPU reference tests, at any shape.

A factory name spells the block and its shape, ``KIND_rROWS_cCHANNELS_hHIDDEN`` (for
example ``residual_r49_c67_h129``), so that

    python -m rowfuse.export ref_models:residual_r49_c67_h129 --rows 49 -o model.onnx

exports it. Each factory returns ``(module, example_input)``; weights come from a seed
derived from the name, so the test rebuilds the very module it exported. KINDS lists the
blocks; the hidden width is ignored by blocks without a hidden layer.
"""

import re
import zlib

import torch
from torch import nn


class ResidualMLP(nn.Module):
    """The reference block: ReLU(fc2(ReLU(fc1(x))) + x)."""

    def __init__(self, c, h):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)

    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))) + x)


class GeluMLP(nn.Module):
    """fc2(GELU(fc1(x))) + x, with exact (erf) or tanh GELU."""

    def __init__(self, c, h, approximate="none"):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x), approximate=self.approximate)) + x


class LayerNormMLP(nn.Module):
    """x + fc2(ReLU(fc1(LayerNorm(x)))) with a non-trivial LayerNorm affine."""

    def __init__(self, c, h):
        super().__init__()
        self.norm = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class AddChannelMean(nn.Module):
    """x + mean over channels."""

    def __init__(self, c, h):
        super().__init__()

    def forward(self, x):
        return x + x.mean(dim=1, keepdim=True)


class FeatureOps(nn.Module):
    """Softmax, Tanh, Sigmoid, ReduceMax, ReduceSum, Pow, Sqrt, Div over channels."""

    def __init__(self, c, h):
        super().__init__()

    def forward(self, x):
        s = torch.softmax(x, dim=1) + torch.tanh(x) * torch.sigmoid(x)
        d = torch.sqrt(torch.pow(x, 2.0).sum(dim=1, keepdim=True) + 1.0)
        return s - torch.amax(x, dim=1, keepdim=True) / d


KINDS = {
    "residual": ResidualMLP,
    "gelu": GeluMLP,
    "gelutanh": lambda c, h: GeluMLP(c, h, "tanh"),
    "layernorm": LayerNormMLP,
    "chanmean": AddChannelMean,
    "featureops": FeatureOps,
}

_NAME = re.compile(r"^([a-z]+)_r(\d+)_c(\d+)_h(\d+)$")


def build(name):
    """Returns (module, example_input) for a factory name; raises AttributeError if the
    name does not spell a known block."""
    m = _NAME.match(name)
    if not m or m.group(1) not in KINDS:
        raise AttributeError(name)
    rows, c, h = int(m.group(2)), int(m.group(3)), int(m.group(4))
    torch.manual_seed(zlib.crc32(name.encode()))
    module = KINDS[m.group(1)](c, h).float().eval()
    return module, torch.randn(rows, c)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda: build(name)
