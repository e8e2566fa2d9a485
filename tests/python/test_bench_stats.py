"""Statistics of the benchmark harness (rowfuse.bench) against closed-form cases.

No GPU and no torch needed: these are the numbers every reported median/p10/p90 comes
from, checked against values computed by hand and against numpy's default quantile.
"""

import math
import random

import numpy as np
import pytest
from rowfuse.bench import harness as bench


def test_quantile_closed_form_1_to_11():
    # 1..11: position q*(n-1) = 10q lands exactly on a rank for q = 0.1 steps.
    vals = [float(i) for i in range(1, 12)]
    assert bench.quantile(vals, 0.5) == 6.0
    assert bench.quantile(vals, 0.1) == 2.0
    assert bench.quantile(vals, 0.9) == 10.0
    assert bench.quantile(vals, 0.0) == 1.0
    assert bench.quantile(vals, 1.0) == 11.0


def test_quantile_interpolates_between_ranks():
    vals = [10.0, 20.0, 30.0, 40.0]  # n-1 = 3
    assert bench.quantile(vals, 0.5) == pytest.approx(25.0)  # pos 1.5
    assert bench.quantile(vals, 0.1) == pytest.approx(13.0)  # pos 0.3
    assert bench.quantile(vals, 0.9) == pytest.approx(37.0)  # pos 2.7


def test_summary_of_uniform_ramp_matches_closed_form():
    # 0, 1, ..., 999 shuffled: median 499.5, p10 = 0.1*999 = 99.9, p90 = 899.1.
    vals = list(range(1000))
    random.Random(7).shuffle(vals)
    s = bench.summarize(vals)
    assert s["count"] == 1000
    assert s["median"] == pytest.approx(499.5)
    assert s["p10"] == pytest.approx(99.9)
    assert s["p90"] == pytest.approx(899.1)
    assert s["mean"] == pytest.approx(499.5)
    assert (s["min"], s["max"]) == (0.0, 999.0)


def test_summary_single_and_constant():
    assert bench.summarize([3.5])["p90"] == 3.5
    s = bench.summarize([2.0] * 17)
    assert s["p10"] == s["median"] == s["p90"] == 2.0


def test_summary_matches_numpy_on_random_data():
    np = pytest.importorskip("numpy")
    rng = random.Random(12345)
    for n in (2, 3, 10, 999, 1000):
        vals = [rng.lognormvariate(1.0, 0.5) for _ in range(n)]
        s = bench.summarize(vals)
        for q, key in ((0.1, "p10"), (0.5, "median"), (0.9, "p90")):
            assert s[key] == pytest.approx(float(np.quantile(vals, q)), rel=1e-12)


def test_summary_rejects_empty_and_nonfinite():
    with pytest.raises(ValueError, match="no observations"):
        bench.summarize([])
    with pytest.raises(ValueError, match="non-finite"):
        bench.summarize([1.0, math.nan])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        bench.quantile([1.0], 1.5)


def test_compare_through_the_library():
    """The one comparison rule through librowfuse.so: the reference passes; an output one
    step away (H kept unrounded) and a NaN fail, with the element named."""
    from rowfuse.capi import clib

    c = clib.mlp_case(64, 24, 40, 9)  # H unrounded: far past the per-element bound
    assert clib.compare(c.ref, c)["passed"]
    x, w1, w2 = (a.astype(np.float64) for a in (c.x, c.w1, c.w2))
    h = np.maximum(x @ w1 + c.b1, 0)
    y = np.maximum(h @ w2 + c.b2 + x, 0)
    far = clib.compare(y, c)
    assert not far["passed"] and far["steps"] == pytest.approx(1.0, rel=1e-3)
    bad = c.ref.copy()
    bad[3, 5] = np.nan
    v = clib.compare(bad, c)
    assert not v["passed"] and v["nonfinite"] == 1 and "[3, 5]" in v["message"]
    same = clib.case_of(c.x, c.w1, c.b1, c.w2, c.b2)
    assert np.array_equal(same.ref, c.ref) and np.array_equal(same.allow, c.allow)


def test_generator_is_seeded_and_never_zero():
    from rowfuse.capi import clib

    a, b, c = clib.mlp_case(7, 5, 9, 42), clib.mlp_case(7, 5, 9, 42), clib.mlp_case(7, 5, 9, 43)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.ref, b.ref)
    assert not np.array_equal(a.x, c.x)
    assert np.all(a.x != 0) and np.all(a.w1 != 0)
    # the reference is the block in the plan's mixed precision, recomputed here with numpy:
    # fp16 inputs, H rounded to fp16 (round to nearest even), fp64 elsewhere
    h = np.maximum(a.x.astype(np.float64) @ a.w1.astype(np.float64) + a.b1, 0).astype(np.float16)
    y = np.maximum(h.astype(np.float64) @ a.w2.astype(np.float64) + a.b2 + a.x, 0)
    assert np.max(np.abs(y - a.ref)) <= 1e-6 * max(1.0, np.max(np.abs(y)))


def test_parse_shapes():
    assert bench.parse_shapes("49x48x96, 64X64x128") == [(49, 48, 96), (64, 64, 128)]
    assert len(bench.parse_shapes(bench.DEV_SHAPES)) == 6
    for bad in ("49x48", "0x48x96", "ax48x96"):
        with pytest.raises(ValueError, match="ROWSxCHANNELSxHIDDEN"):
            bench.parse_shapes(bad)


def test_cli_rejects_missing_shape():
    with pytest.raises(SystemExit, match="--rows"):
        bench.main(["--rows", "49"])


def test_cli_rejects_unknown_variant():
    with pytest.raises(SystemExit, match="unknown cublas .known: torch-eager, torch-compile"):
        bench.main(["--shapes", "49x48x96", "--variants", "triton-fused,cublas"])


def test_cli_lists_xla_and_rejects_bad_timing_options():
    assert "xla" in bench.VARIANT_NAMES
    with pytest.raises(SystemExit, match="unknown cublas .known: torch-eager, .*, xla"):
        bench.main(["--shapes", "49x48x96", "--variants", "xla,cublas"])
    with pytest.raises(SystemExit, match="--control-obs and --compile-budget-s must be >= 0"):
        bench.main(["--shapes", "49x48x96", "--control-obs", "-1"])
    with pytest.raises(
        SystemExit, match="--compile-candidates: unknown fp16-first .known: mm-fp32"
    ):
        bench.main(["--shapes", "49x48x96", "--compile-candidates", "mm-fp32,fp16-first"])


def test_xla_missing_is_a_failed_row_only_when_asked(monkeypatch):
    """Without jax the XLA peer is left out of a plain run, and is a FAILED row naming the
    reason when --variants asked for it."""
    from rowfuse.bench import xla

    why = "jax not installed or not importable (ModuleNotFoundError: No module named 'jax')"
    monkeypatch.setattr(xla, "available", lambda: why)
    assert bench._xla_variant((), (49, 48, 96), asked=False) is None
    v = bench._xla_variant((), (49, 48, 96), asked=True)
    assert v.name == "xla" and v.launch is None and v.note == why and v.kind == "foreign"


def test_xla_block_matches_the_reference_on_the_cpu():
    """jax.jit of the block (on jax's CPU backend where there is no GPU) passes the one
    comparison rule; the same block with X W1 rounded to fp16 before b1 fails it."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from rowfuse.bench import xla
    from rowfuse.capi import clib

    seed = 5
    print(f"seed {seed}")
    c = clib.mlp_case(1024, 64, 256, seed)
    args = (c.x, c.w1, c.b1, c.w2, c.b2)
    y = np.asarray(jax.jit(xla.block_fn())(*args), dtype=np.float32)
    assert clib.compare(y, c)["passed"]

    def rounded(x, w1, b1, w2, b2):
        a = jnp.matmul(x, w1, preferred_element_type=jnp.float32).astype(jnp.float16)
        h = jnp.maximum(a.astype(jnp.float32) + b1, 0.0).astype(jnp.float16)
        t = jnp.matmul(h, w2, preferred_element_type=jnp.float32) + b2 + x.astype(jnp.float32)
        return jnp.maximum(t, 0.0)

    assert not clib.compare(np.asarray(jax.jit(rounded)(*args), dtype=np.float32), c)["passed"]
    # the bench's wrapper: compiled once ahead of time, its output as the check reads it
    blk = xla.XlaBlock(*args, platform="cpu")
    assert clib.compare(blk.output(), c)["passed"]
    t = blk.tuning()
    assert (
        t["jax"] == jax.__version__ and t["compile_s"] >= 0 and "preferred_element" in t["method"]
    )


def test_torch_binding_rejects_bad_inputs_without_a_gpu():
    torch = pytest.importorskip("torch")
    from rowfuse import torch as rt

    x = torch.zeros(4, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="expected a tensor on a CUDA device, got cpu"):
        rt._require(x, "x", torch.float16, (4, 8), None)
    with pytest.raises(ValueError, match="expected dtype torch.float16, got torch.float32"):
        rt._require(x.float(), "x", torch.float16, (4, 8), None)
    with pytest.raises(ValueError, match=r"expected shape \(4, 8\), got \(8, 4\)"):
        rt._require(x.reshape(8, 4), "x", torch.float16, (4, 8), None)
    with pytest.raises(ValueError, match="contiguous"):
        rt._require(x.reshape(8, 4).t(), "x", torch.float16, (4, 8), None)
    with pytest.raises(ValueError, match="two nn.Linear"):
        rt.compile_block(torch.nn.Linear(3, 4), rows=2, package="unused")
    bad = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 9))
    with pytest.raises(ValueError, match="C->H->C"):
        rt.compile_block(bad, rows=2, package="unused")
    with pytest.raises(ValueError, match="weights must be"):
        rt.compile_block(bad, rows=2, package="unused", weights="mine")


def test_verify_module_accepts_the_block_and_rejects_others():
    """compile_block's functional check: the example block passes; the same two Linears
    without the residual do not."""
    import sys

    import torch
    from cli_util import ROOT
    from rowfuse import torch as rt

    sys.path.insert(0, str(ROOT / "examples"))
    import residual_mlp

    m = residual_mlp.make()
    rt.verify_module(m)

    class NoResidual(torch.nn.Module):
        def __init__(self, src):
            super().__init__()
            self.fc1, self.fc2 = src.fc1, src.fc2

        def forward(self, x):
            return torch.relu(self.fc2(torch.relu(self.fc1(x))))

    with pytest.raises(ValueError, match="does not compute the residual MLP block"):
        rt.verify_module(NoResidual(m))
