"""Every block kind of the suite (rowfuse.blocks), exported from PyTorch, matches as a chain;
its fp64 chain reference equals PyTorch in fp64, and its mixed-precision reference (the
plan's fp16 weights and stored values) lies within the derived per-element bound of PyTorch
fp64. The [B, T, C] token form flattens to B*T rows; the real widths match too; blocks that
are not chains are refused naming the node and what is missing.

Needs librowfuse.so (ROWFUSE_LIB) and torch + onnx (the exporter)."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from rowfuse import blocks  # noqa: E402
from rowfuse.capi import clib  # noqa: E402
from rowfuse.export import export  # noqa: E402

V = ctypes.c_void_p


def _lib():
    sigs = {
        "rf_chain_onnx_reference": (
            V,
            [ctypes.c_char_p, V, ctypes.c_int64, ctypes.c_int, V, V, ctypes.c_char_p]
            + [ctypes.c_size_t, V],
        ),
    }
    return clib.bind(clib.library_path(), sigs, "rowfuse library")


def chain_of(path) -> tuple[str, tuple]:
    """(description, (in_width, out_width, rows)) of the model's chain; raises RowfuseError."""
    lib = _lib()
    desc = ctypes.create_string_buffer(16384)
    w = (ctypes.c_int64 * 3)()
    st = lib.rf_chain_onnx_reference(str(path).encode(), None, 0, 0, None, None, desc, 16384, w)
    clib.raise_status(lib, st, f"chain of {path}")
    return desc.value.decode(), (w[0], w[1], w[2])


def reference(path, x16: np.ndarray, mixed: bool):
    """(y, bound) of the chain's reference on x16 [rows, C] (float16)."""
    lib = _lib()
    _, (cin, cout, _) = chain_of(path)
    x16 = np.ascontiguousarray(x16.reshape(-1, cin).astype(np.float16))
    rows = x16.shape[0]
    y = np.zeros((rows, cout))
    b = np.zeros((rows, cout))
    st = lib.rf_chain_onnx_reference(
        str(path).encode(),
        x16.view(np.uint16).ctypes.data,
        rows,
        int(mixed),
        y.ctypes.data,
        b.ctypes.data,
        None,
        0,
        None,
    )
    clib.raise_status(lib, st, f"reference of {path}")
    return y, b


# kind -> the stages its chain must have, in order (op and the fused epilogue).
EXPECTED = {
    "tcnn_mlp": ["linear, relu", "linear, relu", "linear, relu", "linear"],
    "gpt2_ffn": ["norm layernorm", "linear + b, gelu_tanh", "linear + b, + v0"],
    "xl_gelu_ffn": ["norm layernorm", "linear + b, gelu_tanh", "linear + b, + v0"],
    "bert_ffn": ["linear + b, gelu_erf", "linear + b, + v0", "norm layernorm"],
    "vit_ffn_ls": ["norm layernorm", "linear + b, gelu_erf", "linear + b, + v0"],
    "llama_ffn": ["norm rmsnorm", "gated silu", "linear, + v0"],
    "res_mlp_gelu": ["linear + b, gelu_erf", "linear + b, + v0"],
    "res_mlp_silu": ["linear + b, silu", "linear + b, + v0"],
    "classifier": ["norm layernorm", "linear + b, relu", "linear + b"],
    "mlp_head": ["linear + b, silu", "linear + b, silu", "linear + b"],
    "classifier_probs": ["norm layernorm", "linear + b, relu", "linear + b", "norm softmax"],
    "stacked": ["linear + b, relu", "linear + b, + v0, relu", "linear + b, relu"]
    + ["linear + b, + v2, relu"],
    "residual_mlp": ["linear + b, relu", "linear + b, + v0, relu"],
}


# kinds whose chain folds a per-feature scale into a linear's weights (fp32 products), and
# how far that moves the fp64 reference: 2^-24 relative per weight, summed over K terms
FOLDED = ("vit_ffn_ls",)
FOLDED_TOL = 1e-6


def _summary(line: str) -> str:
    """'s1 linear v0 @ W[..] + b, gelu_erf -> v1[..] f16' -> 'linear + b, gelu_erf'."""
    body = line.split(" -> ")[0].split(None, 1)[1]
    op = body.split()[0]
    if op in ("linear", "gated"):
        rest = body.split("]", 1)[1]
        if op == "gated":
            return "gated " + rest.split("gated ")[1].split(",")[0].strip()
        return ("linear" + rest).strip()
    if op == "norm":
        return "norm " + body.split()[1].split("(")[0]
    return op


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("chain_suite")
    out = {}
    for kind in blocks.KINDS:
        m, ex = blocks.make(kind, small=True)
        out[kind] = (m, ex, export(m, ex, ex.shape[0], str(d / f"{kind}.onnx")))
    return out


@pytest.mark.parametrize("kind", list(blocks.KINDS))
def test_suite_matches_and_agrees(kind, exported):
    module, ex, path = exported[kind]
    desc, (cin, cout, rows) = chain_of(path)
    stages = [_summary(ln) for ln in desc.splitlines()[1:]]
    assert stages == EXPECTED[kind], desc
    # precision rule: X and every linear input fp16, Y fp32
    lines = desc.splitlines()
    assert lines[0].endswith("f16 (X)") and lines[-1].endswith("f32"), desc
    x16 = ex.numpy().astype(np.float16)
    with torch.no_grad():
        want = module.double()(torch.from_numpy(x16.astype(np.float64))).numpy()
    want = want.reshape(-1, cout)
    y64, b64 = reference(path, x16, mixed=False)
    ymx, bmx = reference(path, x16, mixed=True)
    # fp64: the chain computes the model's function (LayerNorm's eps is stored in fp32; a
    # folded LayerScale rounds each W * gamma product to fp32, 2^-24 relative)
    tol = FOLDED_TOL if kind in FOLDED else 1e-9
    np.testing.assert_allclose(y64, want, rtol=tol, atol=tol)
    # mixed: within the derived bound of the exact function, element by element
    over = np.abs(ymx - want) > b64
    assert not over.any(), (
        f"{kind}: {over.sum()} elements outside the bound; worst "
        f"{np.max(np.abs(ymx - want) - b64):.3g}"
    )
    # the mixed reference really rounds (it is not the fp64 one) and its own bound is tighter
    assert np.abs(ymx - y64).max() > 0
    assert bmx.sum() < b64.sum()
    ratio = np.abs(ymx - want) / np.maximum(b64, 1e-300)
    print(f"{kind}: rows {rows}, worst |mixed - torch fp64| / bound {ratio.max():.3f}")


@pytest.mark.parametrize("kind", ["gpt2_ffn", "llama_ffn"])
def test_tokens_flatten(kind, tmp_path):
    module, ex = blocks.make(kind, small=True, tokens=True)
    path = export(module, ex, ex.shape[0], str(tmp_path / f"{kind}_tokens.onnx"))
    desc, (cin, cout, rows) = chain_of(path)
    assert rows == ex.shape[0] * ex.shape[1], desc
    x16 = ex.numpy().astype(np.float16)
    with torch.no_grad():
        want = module.double()(torch.from_numpy(x16.astype(np.float64))).numpy()
    y64, _ = reference(path, x16, mixed=False)
    np.testing.assert_allclose(y64, want.reshape(-1, cout), rtol=1e-9, atol=1e-9)


def test_torch_rmsnorm_matches(tmp_path):
    module, ex = blocks.make("llama_ffn", small=True, torch_rmsnorm=True)
    path = export(module, ex, ex.shape[0], str(tmp_path / "llama_torch_rms.onnx"))
    desc, _ = chain_of(path)
    assert [_summary(ln) for ln in desc.splitlines()[1:]] == EXPECTED["llama_ffn"], desc


def test_real_widths_match(tmp_path):
    """The widths of the models the blocks come from (LLaMA 2048 -> 5632 included) match."""
    for kind, (_, real, _) in blocks.KINDS.items():
        module, ex = blocks.make(kind, small=False, rows=4)
        path = export(module, ex, ex.shape[0], str(tmp_path / f"{kind}_real.onnx"))
        desc, (cin, cout, _) = chain_of(path)
        assert [_summary(ln) for ln in desc.splitlines()[1:]] == EXPECTED[kind], desc
        assert cin == real.get("c_in", real.get("c")), desc
        os.unlink(path)


class _Head(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.b(self.f(self.a(x)))


@pytest.mark.parametrize(
    "name,f,needle",
    [
        ("cumsum", lambda h: torch.cumsum(h, -1), "CumSum over features is row-owned but"),
        ("scale", lambda h: 2.0 * torch.relu(h), "fold"),
        (
            "reshape",
            lambda h: h.reshape(h.shape[0], 2, -1).flip(1).reshape(h.shape[0], -1),
            "layout op",
        ),
        ("rowsum", lambda h: h.sum(-1, keepdim=True) * h, "reduction over features"),
    ],
)
def test_refusals_name_node_and_stage(name, f, needle, tmp_path):
    torch.manual_seed(0)
    path = export(_Head(f), torch.randn(8, 32), 8, str(tmp_path / f"{name}.onnx"))
    with pytest.raises(clib.RowfuseError) as e:
        chain_of(path)
    msg = str(e.value)
    assert needle in msg and "node " in msg, msg


def _probs_kernel_model(module, x16: np.ndarray, fault: str = "") -> np.ndarray:
    """What a kernel following the plan of classifier_probs computes, in numpy fp32: the
    LayerNorm (fp32 statistics) stored fp16, fc with ReLU stored fp16, the head's logits
    fp32, then the softmax in fp32 (the row's max, exp, the sum, one division). `fault`:
    "logits_f16" rounds the logits to fp16 (fp16 where the plan says fp32), "sum_f16"
    sums the exps in fp16."""
    f32 = np.float32
    x = x16.astype(f32)
    ln = module.ln
    mu = x.mean(axis=1, dtype=f32, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, dtype=f32, keepdims=True)
    g, b = (t.detach().numpy().astype(f32) for t in (ln.weight, ln.bias))
    h = ((x - mu) / np.sqrt(var + f32(ln.eps)) * g + b).astype(np.float16)
    h = np.maximum(_lin32(h, module.fc), f32(0)).astype(np.float16)
    z = _lin32(h, module.head)
    if fault == "logits_f16":
        z = z.astype(np.float16).astype(f32)
    m = z.max(axis=1, keepdims=True)
    p = np.exp(z - m, dtype=f32)
    s = p.astype(np.float16).sum(axis=1, keepdims=True) if fault == "sum_f16" else None
    s = p.sum(axis=1, dtype=f32, keepdims=True) if s is None else s.astype(f32)
    return (p / s).astype(np.float64)


def test_softmax_stage_bound_holds_and_catches_faults(exported):
    """The softmax stage's bound (src/chain/ref.c rf_softmax_row) against an fp32 model of
    the kernel on 4,096 fresh rows: every element within it; fp16 logits and an fp16 sum
    (precision faults) fall outside."""
    module, _, path = exported["classifier_probs"]
    rng = np.random.default_rng(20261204)
    x16 = (3.0 * rng.standard_normal((4096, module.ln.normalized_shape[0]))).astype(np.float16)
    y, bound = reference(path, x16, mixed=True)
    ok = _probs_kernel_model(module, x16)
    ratio = np.abs(ok - y) / bound
    print(f"softmax: worst |fp32 model - mixed| / bound {ratio.max():.3f}")
    assert ratio.max() <= 1.0
    assert np.abs(ok.sum(axis=1) - 1).max() < 1e-5
    for fault in ("logits_f16", "sum_f16"):
        bad = _probs_kernel_model(module, x16, fault)
        worst = (np.abs(bad - y) / bound).max()
        print(f"softmax fault {fault}: worst / bound {worst:.2f}")
        assert worst > 1.0, fault


def _lin32(v, layer, scale=1.0):
    """A linear as a kernel following the plan computes it: W (times a folded scale, the
    product rounded to fp32) in fp16, the input as stored, fp32 accumulation and bias."""
    w = (layer.weight.detach().double().numpy().T * scale).astype(np.float32)
    b = (layer.bias.detach().double().numpy() * scale).astype(np.float32)
    return v.astype(np.float32) @ w.astype(np.float16).astype(np.float32) + b


def _fp64_and_mixed(path, module, x16, tol):
    """The chain's fp64 reference is the module's function (within `tol`), the mixed
    reference lies within the fp64 bound of it; returns the mixed (y, bound)."""
    with torch.no_grad():
        want = module.double()(torch.from_numpy(x16.astype(np.float64))).numpy()
    y64, b64 = reference(path, x16, mixed=False)
    np.testing.assert_allclose(y64, want.reshape(y64.shape), rtol=tol, atol=tol)
    ymx, bmx = reference(path, x16, mixed=True)
    assert (np.abs(ymx - want.reshape(ymx.shape)) <= b64).all()
    return ymx, bmx


class _Density(torch.nn.Module):
    """A NeRF-style density head: two hidden ReLU layers, one output through softplus
    (`f` gives the softplus: nn.Softplus, or written out as log(1 + exp(x)))."""

    def __init__(self, f):
        super().__init__()
        self.f = f
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 4)

    def forward(self, x):
        return self.f(self.c(torch.relu(self.b(torch.relu(self.a(x))))))


@pytest.mark.parametrize(
    "name,f",
    [("op", torch.nn.Softplus()), ("written", lambda h: torch.log(1.0 + torch.exp(h)))],
)
def test_softplus_matches_and_agrees(name, f, tmp_path):
    """Softplus (the ONNX op, or log(1 + exp(x)) spelled out) is the activation of the last
    linear's epilogue; the fp64 chain is the model's function and the mixed one lies
    within its bound on fresh rows of scale 4 (softplus over both of its regimes)."""
    torch.manual_seed(5)
    module = _Density(f).eval()
    path = export(module, torch.randn(16, 32), 16, str(tmp_path / f"sp_{name}.onnx"))
    desc, (cin, cout, _) = chain_of(path)
    stages = [_summary(ln) for ln in desc.splitlines()[1:]]
    assert stages == ["linear + b, relu", "linear + b, relu", "linear + b, softplus"], desc
    rng = np.random.default_rng(7)
    x16 = (4.0 * rng.standard_normal((512, cin))).astype(np.float16)
    ymx, bmx = _fp64_and_mixed(path, module, x16, 1e-9)
    # an fp32 model of the kernel (fp16 stores, fp32 accumulation, the kernel's softplus
    # form) within the mixed bound; softplus swapped for ReLU (a wrong activation) is not
    f32 = np.float32
    h = np.maximum(_lin32(x16, module.a), f32(0)).astype(np.float16)
    h = np.maximum(_lin32(h, module.b), f32(0)).astype(np.float16)
    z = _lin32(h, module.c)
    ok = np.maximum(z, f32(0)) + np.log1p(np.exp(-np.abs(z)))
    assert (np.abs(ok.astype(np.float64) - ymx) <= bmx).all()
    assert (np.abs(np.maximum(z, f32(0)).astype(np.float64) - ymx) > bmx).any()


class _Siren(torch.nn.Module):
    """A SIREN-style field (sine layers, the first scaled by omega_0 = 30) with an
    exponential output (tiny-cuda-nn's Sine and Exponential activations)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 3)

    def forward(self, x):
        h = torch.sin(30.0 * self.a(x))
        return torch.exp(self.c(torch.sin(self.b(h))))


def test_sine_and_exp_match_and_agree(tmp_path):
    """sin and exp are activations; the constant omega_0 folds into the first linear (its
    products rounded to fp32 once, hence the fp64 tolerance), and an fp32 model of the
    kernel lies within the mixed bound where the same model without omega_0 does not."""
    torch.manual_seed(11)
    module = _Siren().eval()
    path = export(module, torch.randn(16, 32), 16, str(tmp_path / "siren.onnx"))
    desc, (cin, _, _) = chain_of(path)
    stages = [_summary(ln) for ln in desc.splitlines()[1:]]
    assert stages == ["linear + b, sin", "linear + b, sin", "linear + b, exp"], desc
    rng = np.random.default_rng(3)
    x16 = rng.uniform(-1, 1, (512, cin)).astype(np.float16)
    ymx, bmx = _fp64_and_mixed(path, module, x16, FOLDED_TOL)

    def model(omega):
        h = np.sin(_lin32(x16, module.a, omega)).astype(np.float16)
        h = np.sin(_lin32(h, module.b)).astype(np.float16)
        return np.exp(_lin32(h, module.c)).astype(np.float64)

    assert (np.abs(model(30.0) - ymx) <= bmx).all()
    assert (np.abs(model(1.0) - ymx) > bmx).any()


def _np_act(name: str, z, alpha=0.0):
    """The fp32 activations of the kernel model (numpy, float32 in and out)."""
    f32 = np.float32
    if name == "leaky_relu":
        return np.maximum(z, f32(0)) + f32(alpha) * np.minimum(z, f32(0))
    if name == "elu":
        return np.maximum(z, f32(0)) + f32(alpha) * np.expm1(np.minimum(z, f32(0)))
    if name == "mish":
        return z * np.tanh(np.maximum(z, f32(0)) + np.log1p(np.exp(-np.abs(z))))
    return np.maximum(z, f32(0))  # relu: the wrong function of the planted fault


class _Hidden(torch.nn.Module):
    """An MLP whose two hidden layers use activation `f`, one output."""

    def __init__(self, f):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 1)
        self.f = f

    def forward(self, x):
        return self.c(self.f(self.b(self.f(self.a(x)))))


@pytest.mark.parametrize(
    "f,act,alpha",
    [
        (torch.nn.LeakyReLU(0.2), "leaky_relu", 0.2),
        (torch.nn.ELU(0.5), "elu", 0.5),
        (torch.nn.Mish(), "mish", 0.0),
    ],
)
def test_parametric_and_smooth_activations_match_and_agree(f, act, alpha, tmp_path):
    """LeakyReLU and ELU (ONNX ops with an alpha, carried by the stage through the plan and
    the loader) and Mish match as the hidden layers' activation; an fp32 model of the kernel
    lies within the mixed bound, the same model with ReLU in their place does not."""
    torch.manual_seed(13)
    module = _Hidden(f).eval()
    path = export(module, torch.randn(16, 32), 16, str(tmp_path / f"{act}.onnx"))
    desc, (cin, _, _) = chain_of(path)
    shown = f"{act}({alpha:g})" if act in ("leaky_relu", "elu") else act
    stages = [_summary(ln) for ln in desc.splitlines()[1:]]
    assert stages == [f"linear + b, {shown}"] * 2 + ["linear + b"], desc
    rng = np.random.default_rng(17)
    x16 = (2.0 * rng.standard_normal((512, cin))).astype(np.float16)
    # alpha is held in fp32 (0.2 is not a binary fraction): 2^-24 relative on the slope
    ymx, bmx = _fp64_and_mixed(path, module, x16, FOLDED_TOL)

    def model(name):
        h = x16
        for layer in (module.a, module.b):
            h = _np_act(name, _lin32(h, layer), alpha).astype(np.float16)
        return _lin32(h, module.c).astype(np.float64)

    assert (np.abs(model(act) - ymx) <= bmx).all()
    assert (np.abs(model("relu") - ymx) > bmx).any()


def test_every_kind_has_its_own_seed():
    """blocks.SEED_ORDER names every kind once (a kind missing there could not be made),
    with the kinds before the MLP head in alphabetical order, as their seeds always were."""
    order = blocks.SEED_ORDER
    assert sorted(order) == sorted(blocks.KINDS) and len(set(order)) == len(order)
    first = order[: order.index("mlp_head")]
    assert first == sorted(first)
