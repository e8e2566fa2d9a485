"""rowfuse.iree.block: the derived per-element bound accepts what a correct mixed-precision
implementation of the block can differ by and rejects real errors; the contract reader
gets back the bytes the C writer put in. (The modules themselves are checked by
tests/mlir/flow.sh, which `make mlir` runs once rowfuse-opt is built.)"""

from __future__ import annotations

import numpy as np
import pytest
from rowfuse.capi import clib
from rowfuse.iree import block as iree_block


@pytest.fixture(scope="module")
def case():
    return clib.mlp_case(49, 48, 96, 7)


def fp32_block(c, round_h=True, b2=True, order=1):
    """The block in numpy fp32 (another summation order than the reference's exact sums)."""
    x, w1, w2 = (a.astype(np.float32) for a in (c.x, c.w1, c.w2))
    p1 = x[:, ::order] @ w1[::order, :]
    h = np.maximum(p1 + c.b1, np.float32(0.0))
    if round_h:
        h = h.astype(np.float16).astype(np.float32)
    y = h[:, ::order] @ w2[::order, :] + (c.b2 if b2 else 0.0) + x
    return np.maximum(y, np.float32(0.0))


def errors(c, y):
    bound = iree_block.derived_bound(c.x, c.w1, c.b1, c.w2, c.b2)
    return np.abs(y.astype(np.float64) - c.ref.astype(np.float64)), bound


def test_reference_itself_is_within(case):
    err, bound = errors(case, case.ref)
    assert np.all(bound > 0) and np.all(err <= bound)


@pytest.mark.parametrize("order", [1, -1])
def test_fp32_implementations_are_within(case, order):
    err, bound = errors(case, fp32_block(case, order=order))
    assert np.all(err <= bound), float((err / bound).max())


def test_fp16_flip_only_near_a_rounding_boundary():
    """An H value may differ by one fp16 step only where the fp32 error can reach the
    midpoint between two fp16 values: a 1x1x1 block (x = 1, W2 = 1) whose pre-activation
    sits on a rounding boundary gets a bound of that step; one a quarter step away does
    not."""
    one = np.ones((1, 1), dtype=np.float16)
    step = 2.0**-10  # fp16 spacing in [1, 2)
    w1 = one.copy()

    def bound(b1: float) -> float:
        b = np.array([b1], dtype=np.float32)
        return float(iree_block.derived_bound(one, w1, b, one, np.zeros(1, np.float32))[0, 0])

    on = bound(step / 2)  # p = 1 + step / 2: the midpoint of 1 and 1 + step (exact in fp32)
    off = bound(step / 4)
    assert step <= on < 1.01 * step
    assert off < 1e-2 * step


def test_real_errors_are_outside(case):
    err, bound = errors(case, fp32_block(case, b2=False))
    assert not np.all(err <= bound)


def test_unrounded_h_is_told_apart(case):
    """A correct implementation is far closer to the mixed reference than to the block with
    H unrounded; one that keeps H in fp32 is not."""
    alt = iree_block.unrounded_block(case.x, case.w1, case.b1, case.w2, case.b2)
    ref = case.ref.astype(np.float64)
    assert iree_block.h_rounded(fp32_block(case), ref, alt)
    assert not iree_block.h_rounded(fp32_block(case, round_h=False), ref, alt)


def test_read_contract_round_trip(tmp_path, case):
    def hexof(a, dtype):
        return np.ascontiguousarray(a, dtype=dtype).tobytes().hex().upper()

    text = (
        "func.func @main(%x: tensor<49x48xf16> {rowfuse.row}) -> tensor<49x48xf32> {\n"
        f'  %w1 = arith.constant dense<"0x{hexof(case.w1, "<f2")}"> : tensor<48x96xf16>\n'
        f'  %b1 = arith.constant dense<"0x{hexof(case.b1, "<f4")}"> : tensor<96xf32>\n'
        f'  %w2 = arith.constant dense<"0x{hexof(case.w2, "<f2")}"> : tensor<96x48xf16>\n'
        f'  %b2 = arith.constant dense<"0x{hexof(case.b2, "<f4")}"> : tensor<48xf32>\n'
    )
    path = tmp_path / "contract.mlir"
    path.write_text(text)
    w = iree_block.read_contract(str(path))
    assert (w["rows"], w["channels"]) == (49, 48)
    for k in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(w[k], getattr(case, k))
    path.write_text(text.replace("%b2", "%bb"))
    with pytest.raises(ValueError, match="b2"):
        iree_block.read_contract(str(path))


def test_gpu_table_and_per_dispatch():
    """rowfuse.iree.gpu's summary of a run (the GPU harness itself runs on the GPU machine)."""
    from rowfuse.iree import gpu as iree_gpu

    def v(label, host, span, kernels):
        return {
            "label": label,
            "kernels": kernels,
            "host_us": {"median": host},
            "span_us": {"median": span},
            "check": {"passed": True},
        }

    run = {
        "variants": {
            "iree-persistent-smem-streams": v("IREE persistent-smem (streams)", 30.0, 2.0, 1),
            "iree-conventional-streams": v("IREE conventional (streams)", 36.0, 4.0, 2),
            "rowfuse-persistent-smem-eager": v("rowfuse persistent-smem (eager)", 12.0, 1.5, 1),
            "rowfuse-conventional-eager": v("rowfuse conventional (eager)", 15.0, 3.0, 2),
            "iree-stock-streams": {"label": "IREE stock (streams)", "error": "boom"},
        }
    }
    text = iree_gpu.table([run])
    assert "| IREE persistent-smem (streams) | 1 | 2.00 | - | 30.00 | ok |" in text
    assert "| IREE stock (streams) | - | - | - | - | boom |" in text
    lines = iree_gpu.per_dispatch([run])
    assert lines[0] == (
        "IREE streams, host completion: 1 dispatch 30.00 us (rowfuse eager 12.00: IREE adds "
        "+18.00 us per call); the 2nd dispatch adds +6.00 us (rowfuse eager +3.00)"
    )
