"""Small models for the `rowfuse eval` tests (exported with `python -m rowfuse.export
eval_models:FACTORY --rows N`): the residual MLP block with a classifier head, with a
one-column regression head, and a row-owned model whose output rows are not vectors."""

import torch
from torch import nn

CHANNELS = 4
HIDDEN = 8
CLASSES = 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(CHANNELS, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CHANNELS)

    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))) + x)


class Headed(nn.Module):
    def __init__(self, outputs):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(CHANNELS, outputs)

    def forward(self, x):
        return self.head(self.block(x))


class Grid(nn.Module):
    """Row-owned, but each output row is a 2x2 grid, not a vector."""

    def forward(self, x):
        return torch.relu(x).reshape(x.shape[0], 2, 2)


def classifier():
    torch.manual_seed(0)
    return Headed(CLASSES)


def regressor():
    torch.manual_seed(0)
    return Headed(1)


def grid():
    return Grid(), torch.zeros(8, CHANNELS)
