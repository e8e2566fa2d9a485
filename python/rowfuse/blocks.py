"""The suite of row-owned block kinds rowfuse compiles, as PyTorch modules with fixed seeds.

    python -m rowfuse.export rowfuse.blocks:gpt2_ffn --rows 64 -o gpt2_ffn.onnx

Every factory returns ``(module, example_input)``; the example input has ``ROWS`` rows
(``tokens`` adds a [2, rows/2, C] token form). ``small=True`` (the default of ``*_small``
factories) gives the CI widths; the plain factories give the widths of the models the
blocks come from. Norm gains and shifts are drawn around 1 and 0 (not left at their
initial values), so a chain that dropped them would differ.

Kinds (KINDS lists them with their real and CI widths):
  tcnn_mlp      tiny-cuda-nn style: 4 linears without biases, 3 hidden layers of 64, ReLU
  gpt2_ffn      GPT-2 pre-LN FFN: x + fc2(gelu_tanh(fc1(LN(x))))          768 -> 3072
  bert_ffn      BERT post-LN FFN: LN(x + fc2(gelu(fc1(x))))                768 -> 3072
  vit_ffn_ls    ViT MLP sublayer with LayerScale (DINOv2 ViT-S):
                x + gamma * fc2(gelu(fc1(LN(x))))                         384 -> 1536
  llama_ffn     LLaMA SwiGLU FFN: x + down(silu(gate(r)) * up(r)), r = RMSNorm(x) in the
                rsqrt form x * rsqrt(mean(x^2) + eps) * w                  2048 -> 5632
  xl_gelu_ffn   the GPT-2 FFN at 4096 -> 16384 (268 MB of fp16 weights), the decode regime
  res_mlp_gelu  residual MLP with GELU: x + fc2(gelu(fc1(x)))
  res_mlp_silu  residual MLP with SiLU: x + fc2(silu(fc1(x)))
  classifier    LN, a hidden layer with ReLU, a head to 10 classes
  mlp_head      an MLP head: 3 linears with biases, SiLU between them, 48 -> 96 -> 96 -> 10
  classifier_probs  the same, its logits through a softmax over the classes
  stacked       two residual MLPs (ReLU) one after the other
  residual_mlp  the reference block: relu(fc2(relu(fc1(x))) + x)
"""

from __future__ import annotations

import re

import torch
from torch import nn

ROWS = 64
SEED = 2024


def _seeded(seed: int):
    torch.manual_seed(seed)


def _input(rows: int, channels: int, seed: int, tokens: bool = False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(rows, channels, generator=gen)
    return x.reshape(2, rows // 2, channels) if tokens else x


def _perturb_norm(norm: nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        w = getattr(norm, "weight", None)
        if w is not None:
            w.copy_(1.0 + 0.1 * torch.randn(w.shape, generator=gen))
        b = getattr(norm, "bias", None)
        if b is not None:
            b.copy_(0.1 * torch.randn(b.shape, generator=gen))


class TcnnMLP(nn.Module):
    def __init__(self, c_in=32, hidden=64, layers=3, c_out=16):
        super().__init__()
        dims = [c_in] + [hidden] * layers + [c_out]
        self.fcs = nn.ModuleList(
            nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:], strict=True)
        )

    def forward(self, x):
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < len(self.fcs) - 1:
                x = torch.relu(x)
        return x


class MLPHead(nn.Module):
    def __init__(self, c_in=48, hidden=96, c_out=10):
        super().__init__()
        self.fc1 = nn.Linear(c_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, c_out)

    def forward(self, x):
        return self.fc3(nn.functional.silu(self.fc2(nn.functional.silu(self.fc1(x)))))


class Gpt2FFN(nn.Module):
    def __init__(self, c=768, h=3072):
        super().__init__()
        self.ln = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class ViTFFNLayerScale(nn.Module):
    """The MLP sublayer of a ViT with LayerScale (DINOv2, CaiT): x + gamma * fc2(gelu(fc1(LN(x))))
    with a learned per-channel gamma (drawn around 0.1 here, not left at its 1e-5 init)."""

    def __init__(self, c=384, h=1536):
        super().__init__()
        self.ln = nn.LayerNorm(c, eps=1e-6)
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)
        self.gamma = nn.Parameter(0.1 + 0.05 * torch.randn(c))

    def forward(self, x):
        return x + self.gamma * self.fc2(nn.functional.gelu(self.fc1(self.ln(x))))


class BertFFN(nn.Module):
    def __init__(self, c=768, h=3072):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)
        self.ln = nn.LayerNorm(c, eps=1e-12)

    def forward(self, x):
        return self.ln(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class LlamaRMSNorm(nn.Module):
    """The usual rsqrt form (as in LLaMA's reference code)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaFFN(nn.Module):
    def __init__(self, c=2048, h=5632, torch_rmsnorm=False):
        super().__init__()
        self.norm = nn.RMSNorm(c, eps=1e-6) if torch_rmsnorm else LlamaRMSNorm(c)
        self.gate = nn.Linear(c, h, bias=False)
        self.up = nn.Linear(c, h, bias=False)
        self.down = nn.Linear(h, c, bias=False)

    def forward(self, x):
        r = self.norm(x)
        return x + self.down(nn.functional.silu(self.gate(r)) * self.up(r))


class ResMLP(nn.Module):
    def __init__(self, c=256, h=1024, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)
        self.act = {"gelu": nn.GELU(), "silu": nn.SiLU(), "relu": nn.ReLU()}[act]

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class Classifier(nn.Module):
    def __init__(self, c=256, h=512, classes=10, probs=False):
        super().__init__()
        self.ln = nn.LayerNorm(c)
        self.fc = nn.Linear(c, h)
        self.head = nn.Linear(h, classes)
        self.probs = probs

    def forward(self, x):
        y = self.head(torch.relu(self.fc(self.ln(x))))
        return torch.softmax(y, dim=-1) if self.probs else y


class Stacked(nn.Module):
    def __init__(self, c=128, h=256):
        super().__init__()
        self.a1, self.a2 = nn.Linear(c, h), nn.Linear(h, c)
        self.b1, self.b2 = nn.Linear(c, h), nn.Linear(h, c)

    def forward(self, x):
        x = torch.relu(self.a2(torch.relu(self.a1(x))) + x)
        return torch.relu(self.b2(torch.relu(self.b1(x))) + x)


class ResidualMLP(nn.Module):
    def __init__(self, c=48, h=96):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.fc2 = nn.Linear(h, c)

    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))) + x)


# kind -> (constructor, real widths, CI widths); widths are the constructor's keywords.
KINDS = {
    "tcnn_mlp": (TcnnMLP, {"c_in": 32, "hidden": 64}, {"c_in": 32, "hidden": 64}),
    "gpt2_ffn": (Gpt2FFN, {"c": 768, "h": 3072}, {"c": 128, "h": 512}),
    "bert_ffn": (BertFFN, {"c": 768, "h": 3072}, {"c": 128, "h": 512}),
    "vit_ffn_ls": (ViTFFNLayerScale, {"c": 384, "h": 1536}, {"c": 64, "h": 256}),
    "llama_ffn": (LlamaFFN, {"c": 2048, "h": 5632}, {"c": 256, "h": 688}),
    # a GELU FFN at 4096 -> 16384 (268 MB of fp16 weights): the decode regime's second block
    "xl_gelu_ffn": (Gpt2FFN, {"c": 4096, "h": 16384}, {"c": 128, "h": 512}),
    "res_mlp_gelu": (
        ResMLP,
        {"c": 256, "h": 1024, "act": "gelu"},
        {"c": 64, "h": 256, "act": "gelu"},
    ),
    "res_mlp_silu": (
        ResMLP,
        {"c": 256, "h": 1024, "act": "silu"},
        {"c": 64, "h": 256, "act": "silu"},
    ),
    "classifier": (Classifier, {"c": 256, "h": 512}, {"c": 64, "h": 128}),
    "mlp_head": (MLPHead, {"c_in": 48, "hidden": 96}, {"c_in": 48, "hidden": 96}),
    "classifier_probs": (
        Classifier,
        {"c": 256, "h": 512, "probs": True},
        {"c": 64, "h": 128, "probs": True},
    ),
    "stacked": (Stacked, {"c": 128, "h": 256}, {"c": 64, "h": 96}),
    "residual_mlp": (ResidualMLP, {"c": 48, "h": 96}, {"c": 48, "h": 96}),
}


# each kind's seed is SEED + its index here: the kinds in alphabetical order as the suite
# first had them, later kinds appended, so that adding a kind leaves every other's weights
SEED_ORDER = sorted(set(KINDS) - {"mlp_head"}) + ["mlp_head"]


def make(kind: str, small: bool = False, rows: int = ROWS, tokens: bool = False, **overrides):
    """(module, example_input) of a block kind with its fixed seed."""
    if kind not in KINDS:
        raise ValueError(f"unknown block kind {kind!r}; kinds: {', '.join(KINDS)}")
    cls, real, ci = KINDS[kind]
    kw = dict(ci if small else real)
    kw.update(overrides)
    seed = SEED + SEED_ORDER.index(kind)
    _seeded(seed)
    module = cls(**kw).float().eval()
    for m in module.modules():
        if isinstance(m, (nn.LayerNorm, nn.RMSNorm, LlamaRMSNorm)):
            _perturb_norm(m, seed)
    c_in = kw.get("c_in", kw.get("c"))
    return module, _input(rows, c_in, seed, tokens)


def spec_name(kind: str, **widths) -> str:
    """The spec of a kind at other widths: KIND@ followed by each width keyword and its
    value run together, e.g. spec_name("llama_ffn", c=1536, h=6144) ==
    "llama_ffn@c1536h6144" (no '-', so package names KIND-ROWS still split)."""
    return kind + ("@" + "".join(f"{k}{int(v)}" for k, v in widths.items()) if widths else "")


def parse_spec(spec: str) -> tuple[str, dict]:
    """(kind, width overrides) of KIND or KIND@WIDTHS (spec_name); ValueError naming what
    is wrong: an unknown kind, a keyword the kind has no width for, a width not a positive
    integer."""
    kind, _, rest = spec.partition("@")
    if kind not in KINDS:
        raise ValueError(f"unknown block kind {kind!r} in {spec!r}; kinds: {', '.join(KINDS)}")
    if not rest:
        return kind, {}
    real = KINDS[kind][1]
    pairs = re.findall(r"([a-z_]+?)(\d+)", rest)
    if "".join(k + v for k, v in pairs) != rest:
        raise ValueError(f"{spec!r}: widths must be keyword-value pairs such as c1536h6144")
    out = {}
    for k, v in pairs:
        if k not in real or not isinstance(real[k], int) or isinstance(real[k], bool):
            widths = [w for w, x in real.items() if isinstance(x, int) and not isinstance(x, bool)]
            raise ValueError(f"{spec!r}: {kind} has no width {k!r} (its widths: {widths})")
        if int(v) <= 0:
            raise ValueError(f"{spec!r}: width {k} must be positive")
        out[k] = int(v)
    return kind, out


def make_spec(spec: str, small: bool = False, rows: int = ROWS, tokens: bool = False):
    """make() of a spec (KIND or KIND@WIDTHS): the kind's module at those widths, with the
    kind's fixed seed."""
    kind, widths = parse_spec(spec)
    return make(kind, small=small, rows=rows, tokens=tokens, **widths)


def _factory(kind: str, small: bool):
    def f():
        return make(kind, small=small)

    f.__name__ = kind + ("_small" if small else "")
    f.__doc__ = f"The {kind} block at the {'CI' if small else 'real'} widths."
    return f


for _k in KINDS:
    globals()[_k] = _factory(_k, False)
    globals()[_k + "_small"] = _factory(_k, True)
