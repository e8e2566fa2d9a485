"""PyTorch modules for the verifier tests: row-owned blocks that must be accepted and
row-mixing blocks that must be rejected.

Each factory takes no arguments and returns ``(module, example_input)`` so that
``python -m rowfuse.export models:FACTORY --rows N`` can export it; the example input has
ROWS rows (modules that depend on the row count are built for it).
"""

import math

import torch
from torch import nn

ROWS = 64
CHANNELS = 48
HIDDEN = 96


def _input(rows=ROWS, channels=CHANNELS):
    return torch.randn(rows, channels, generator=torch.Generator().manual_seed(1))


def _seeded(module):
    torch.manual_seed(0)
    return module


# ---- accepted: every output row depends only on the same input row ----


class ResidualMLP(nn.Module):
    def __init__(self, channels=CHANNELS, hidden=HIDDEN):
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)

    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))) + x)


class MLP3Residual(nn.Module):
    def __init__(self, channels=CHANNELS, hidden=HIDDEN):
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, channels)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.fc3(h) + x


class GeluMLP(nn.Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.fc1 = nn.Linear(CHANNELS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CHANNELS)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x), approximate=self.approximate))


class GeluManualMLP(nn.Module):
    """GELU written out: x * 0.5 * (1 + erf(x / sqrt(2)))."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(CHANNELS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CHANNELS)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0))))


class SiluMLP(nn.Module):
    def __init__(self, explicit=False):
        super().__init__()
        self.fc1 = nn.Linear(CHANNELS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CHANNELS)
        self.explicit = explicit

    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(h) if self.explicit else nn.functional.silu(h)
        return self.fc2(h)


class LayerNormMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(CHANNELS)
        self.fc1 = nn.Linear(CHANNELS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CHANNELS)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class AddChannelMean(nn.Module):
    def forward(self, x):
        return x + x.mean(dim=1, keepdim=True)


# ---- rejected: some output row depends on another input row ----


class RowMeanNorm(nn.Module):
    """BatchNorm-style statistics: subtract the mean over rows."""

    def forward(self, x):
        return x - x.mean(dim=0, keepdim=True)


class RowSum(nn.Module):
    def forward(self, x):
        return x + x.sum(dim=0)


class RowMax(nn.Module):
    def forward(self, x):
        return x - torch.amax(x, dim=0, keepdim=True)


class RowSoftmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=0)


class FeatureSoftmax(nn.Module):
    """Row-owned: softmax over each row's features (a chain: linear, softmax)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(CHANNELS, CHANNELS)

    def forward(self, x):
        return torch.softmax(self.lin(x), dim=-1)


class FeatureCumsum(nn.Module):
    """Row-owned (a prefix sum over each row's features) but no stage rowfuse compiles."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(CHANNELS, CHANNELS)

    def forward(self, x):
        return torch.cumsum(self.lin(x), dim=-1)


class SelfAttention(nn.Module):
    """X @ X^T: every row attends to every other row."""

    def forward(self, x):
        return torch.softmax(x @ x.t() / math.sqrt(x.shape[1]), dim=-1) @ x


class GramRows(nn.Module):
    """X @ X^T through linear(): every row is projected on every other row."""

    def forward(self, x):
        return nn.functional.linear(nn.functional.linear(x, x), x.t())


class RowCumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=0)


class FoldRows(nn.Module):
    """Reshape [N, C] to [N/2, 2C]: two rows become one."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2 * CHANNELS, 2 * CHANNELS)

    def forward(self, x):
        n, c = x.shape
        return self.fc(x.reshape(n // 2, 2 * c)).reshape(n, c)


class TransposeRows(nn.Module):
    """Mix along rows by transposing, projecting over rows, transposing back."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(ROWS, ROWS)

    def forward(self, x):
        return self.fc(x.t()).t()


class RollRows(nn.Module):
    def forward(self, x):
        return x + torch.roll(x, shifts=1, dims=0)


class FlipRows(nn.Module):
    def forward(self, x):
        return x + torch.flip(x, dims=[0])


class BroadcastRow0(nn.Module):
    def forward(self, x):
        return x + x[0]


def _make(cls, *args):
    return _seeded(cls(*args)), _input()


def residual_mlp():
    return _make(ResidualMLP)


def mlp3_residual():
    return _make(MLP3Residual)


def gelu_mlp():
    return _make(GeluMLP)


def gelu_tanh_mlp():
    return _make(GeluMLP, "tanh")


def gelu_manual_mlp():
    return _make(GeluManualMLP)


def silu_mlp():
    return _make(SiluMLP)


def silu_explicit_mlp():
    return _make(SiluMLP, True)


def layernorm_mlp():
    return _make(LayerNormMLP)


def add_channel_mean():
    return _make(AddChannelMean)


def row_mean():
    return _make(RowMeanNorm)


def row_sum():
    return _make(RowSum)


def row_max():
    return _make(RowMax)


def row_softmax():
    return _make(RowSoftmax)


def feature_softmax():
    return _make(FeatureSoftmax)


def feature_cumsum():
    return _make(FeatureCumsum)


def self_attention():
    return _make(SelfAttention)


def gram_rows():
    return _make(GramRows)


def row_cumsum():
    return _make(RowCumsum)


def fold_rows():
    return _make(FoldRows)


def transpose_rows():
    return _make(TransposeRows)


def roll_rows():
    return _make(RollRows)


def flip_rows():
    return _make(FlipRows)


def broadcast_row0():
    return _make(BroadcastRow0)


ACCEPTED = [
    "residual_mlp",
    "mlp3_residual",
    "gelu_mlp",
    "gelu_tanh_mlp",
    "gelu_manual_mlp",
    "silu_mlp",
    "silu_explicit_mlp",
    "layernorm_mlp",
    "add_channel_mean",
    "feature_softmax",
]

REJECTED = [
    "row_mean",
    "row_sum",
    "row_max",
    "row_softmax",
    "self_attention",
    "gram_rows",
    "row_cumsum",
    "fold_rows",
    "transpose_rows",
    "roll_rows",
    "flip_rows",
    "broadcast_row0",
]
