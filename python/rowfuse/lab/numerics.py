"""How close an fp32 result must be to the reference, and the comparison itself.

Every lab model is fp32 end to end, so IREE and PyTorch differ only in how they round:
the order in which each dot product is accumulated (tiling, vector lanes, FMA), and the
polynomial or library approximations of exp/tanh/sigmoid. One length-K fp32 dot product
of terms with random signs accumulates K roundings of relative size <= u = 2^-24 on
partial sums that grow like sqrt(k): its relative error is of order u*sqrt(K) (K*u in
the worst case, which random data does not reach). Along the longest path of
contractions K_1..K_n the errors compound, and the activations (ReLU, max-pool, sigmoid,
tanh: slope <= 1; softmax: exp of scores of order 1) do not amplify them by more than a
small factor. So

    tol = SAFETY * u * sqrt(K_1 + ... + K_n),  SAFETY = 4

(2 for two independent fp32 implementations each within u*sqrt(sum K) of the exact
value, 2 for the activations and slack). For the CNN that is 1.1e-5, for attention and
the GRU 3.8e-6 and 3.6e-6 (models.contraction_lengths). The measure is the relative L2
norm of the difference over the whole output. A TF32 or fp16 computation (errors near
1e-3) or a missing mask (errors near 1) fails it by orders of magnitude.
"""

from __future__ import annotations

import math

import numpy as np

U_FP32 = 2.0**-24
SAFETY = 4.0


def tolerance(contraction_lengths) -> float:
    return SAFETY * U_FP32 * math.sqrt(sum(contraction_lengths))


def rel_l2(out, ref) -> float:
    """||out - ref|| / ||ref|| in fp64; inf when out has a non-finite element."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape {out.shape} vs reference {ref.shape}")
    if not np.all(np.isfinite(out)):
        return math.inf
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def first_mismatches(out, ref, tol: float, count: int = 3) -> list[str]:
    """The first elements whose error exceeds tol * max|ref|, with their indices."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    bad = np.argwhere(~(np.abs(out - ref) <= tol * np.max(np.abs(ref))))
    return [
        f"{tuple(int(i) for i in idx)}: {out[tuple(idx)]:.9g} vs {ref[tuple(idx)]:.9g}"
        for idx in bad[:count]
    ]


def compare(out, ref64, ref32, tol: float) -> dict:
    """Errors of `out` against the fp64 and fp32 PyTorch results; ok when both <= tol."""
    e64, e32 = rel_l2(out, ref64), rel_l2(out, ref32)
    result = {
        "rel_l2_vs_torch_fp64": e64,
        "rel_l2_vs_torch_fp32": e32,
        "torch_fp32_rel_l2_vs_fp64": rel_l2(ref32, ref64),
        "tolerance": tol,
        "ok": e64 <= tol and e32 <= tol,
    }
    if not result["ok"]:
        result["first_mismatches"] = first_mismatches(out, ref64, tol)
    return result
