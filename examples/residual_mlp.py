"""The reference block: a two-layer residual MLP, Y = ReLU(fc2(ReLU(fc1(X))) + X).

python -m rowfuse.export residual_mlp:make --rows 49 -o model.onnx   (from examples/)
"""

import torch

CHANNELS = 48
HIDDEN = 96
SEED = 1234


class ResidualMLP(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS, hidden: int = HIDDEN):
        super().__init__()
        self.fc1 = torch.nn.Linear(channels, hidden)
        self.fc2 = torch.nn.Linear(hidden, channels)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return torch.relu(self.fc2(h) + x)


def make(channels: int = CHANNELS, hidden: int = HIDDEN, seed: int = SEED):
    """The example model with weights from a fixed seed."""
    torch.manual_seed(seed)
    return ResidualMLP(channels, hidden)
