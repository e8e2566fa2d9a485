"""The CPU reference (`rowfuse run --cpu`) against PyTorch on exported models.

Each block of ref_models.py is exported at several shapes, rows/channels/hidden included
that are not multiples of 8 or 16, and run on fresh random inputs in both precisions:
- fp64 must match the module run by PyTorch in float64 to 1e-12 relative;
- mixed must match PyTorch emulating the GPU plan's roundings op by op (inputs and both
  matmul operands fp16, matmul sums and every other result fp32) to 1e-6 relative.
Relative means |got - want| <= rtol * max(|want|, 1e-2 * max|want|), elementwise.

The first case is exported with the exact command line other tools use
(`python -m rowfuse.export`); the others call the same export function in this process,
which saves a torch start-up per model.
"""

from __future__ import annotations

import secrets

import numpy as np
import pytest
import ref_models
import torch
from cli_util import export, rowfuse
from rowfuse.export import export as export_in_process

CASES = [
    ("residual", 1, 5, 3),
    ("residual", 7, 48, 96),
    ("residual", 49, 67, 129),
    ("residual", 130, 48, 129),
    ("gelu", 7, 67, 129),
    ("gelu", 130, 5, 96),
    ("gelutanh", 49, 48, 3),
    ("layernorm", 1, 67, 96),
    ("layernorm", 49, 5, 129),
    ("layernorm", 130, 48, 3),
    ("chanmean", 7, 5, 0),
    ("chanmean", 130, 67, 0),
    ("featureops", 49, 67, 0),
]


def f16(t):
    return t.to(torch.float16).to(torch.float64)


def f32(t):
    return t.to(torch.float32).to(torch.float64)


def linear(h, fc):
    """Gemm in the mixed plan: fp16 operands, exact products summed in fp64, rounded to
    fp32; then the bias added and the sum rounded to fp32."""
    w = fc.weight.detach().double()
    return f32(f32(f16(h) @ f16(w).T) + fc.bias.detach().double())


def mixed_residual(m, x):
    h = torch.relu(linear(x, m.fc1))
    return torch.relu(f32(linear(h, m.fc2) + x))


def mixed_gelu(m, x):
    h = f32(torch.nn.functional.gelu(linear(x, m.fc1), approximate=m.approximate))
    return f32(linear(h, m.fc2) + x)


def mixed_layernorm(m, x):
    w, b = m.norm.weight.detach().double(), m.norm.bias.detach().double()
    n = f32(torch.nn.functional.layer_norm(x, m.norm.normalized_shape, w, b, m.norm.eps))
    h = torch.relu(linear(n, m.fc1))
    return f32(x + linear(h, m.fc2))


def mixed_chanmean(m, x):
    return f32(x + f32(x.mean(dim=1, keepdim=True)))


def mixed_featureops(m, x):
    s = f32(f32(torch.softmax(x, dim=1)) + f32(f32(torch.tanh(x)) * f32(torch.sigmoid(x))))
    d = f32(torch.sqrt(f32(f32(f32(torch.pow(x, 2.0)).sum(dim=1, keepdim=True)) + 1.0)))
    return f32(s - f32(f32(torch.amax(x, dim=1, keepdim=True)) / d))


MIXED = {
    "residual": mixed_residual,
    "gelu": mixed_gelu,
    "gelutanh": mixed_gelu,
    "layernorm": mixed_layernorm,
    "chanmean": mixed_chanmean,
    "featureops": mixed_featureops,
}


def assert_close(got, want, rtol, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    got = got.astype(np.float64)
    # relative to each value, floored at 1% of the largest (and above zero: a ReLU output
    # can be all zeros for one row, where any non-zero value must then fail)
    scale = np.maximum(np.abs(want), max(1e-2 * np.abs(want).max(), 1e-300))
    err = np.abs(got - want) / scale
    worst = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= rtol, (
        f"{what}: relative error {err.max():.3g} > {rtol:g} at {worst}: "
        f"got {got[worst]!r}, want {want[worst]!r}"
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref_models")
    cache = {}

    def get(name, rows):
        if name not in cache:
            out = d / f"{name}.onnx"
            if not cache:
                export(f"ref_models:{name}", rows, out)
            else:
                module, example = ref_models.build(name)
                export_in_process(module, example, rows, str(out))
            cache[name] = out
        return cache[name]

    return get


@pytest.mark.parametrize("kind,rows,channels,hidden", CASES)
def test_cpu_reference_matches_pytorch(exported, tmp_path, kind, rows, channels, hidden):
    name = f"{kind}_r{rows}_c{channels}_h{hidden}"
    model = exported(name, rows)
    module, _ = ref_models.build(name)
    seed = secrets.randbits(32)
    what = f"{name} seed {seed}"
    # ONNX float attributes are fp32: the file holds LayerNorm's epsilon rounded to fp32.
    for m in module.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = float(np.float32(m.eps))
    module = module.double()
    # A final ReLU can zero every output of a small case (1 row, 5 channels: about 1 draw
    # in 30), which would compare nothing: draw again from the same generator until some
    # output is non-zero.
    rng = np.random.default_rng(seed)
    for _ in range(64):
        x = rng.standard_normal((rows, channels)).astype(np.float32)
        xt = torch.from_numpy(x).double()
        with torch.no_grad():
            want64 = module(xt).numpy()
        if np.any(want64 != 0):
            break
    else:
        pytest.fail(f"{what}: 64 inputs gave an all-zero output")
    xp = tmp_path / "x.npy"
    np.save(xp, x)

    y = {}
    for precision in ("fp64", "mixed"):
        yp = tmp_path / f"y_{precision}.npy"
        rowfuse(
            "run", model, "--input", xp, "--output", yp, "--cpu", "--precision", precision, check=0
        )
        y[precision] = np.load(yp)
    assert y["fp64"].dtype == np.float64 and y["mixed"].dtype == np.float32

    with torch.no_grad():
        want_mixed = MIXED[kind](module, f16(xt)).numpy()
    assert_close(y["fp64"], want64, 1e-12, f"{what} fp64")
    assert_close(y["mixed"], want_mixed, 1e-6, f"{what} mixed")
    # The two precisions really differ, so the mixed comparison can fail.
    assert np.abs(want_mixed - want64).max() > 1e-5 * np.abs(want64).max(), what
