"""ctypes binding of librowfuse.so: the one test-data generator, CPU reference, comparison
and quantile that C and Python share (rowfuse/mlp.h, src/base/stats.c).

    case = clib.mlp_case(rows, channels, hidden, seed)   # numpy arrays, ref in mixed precision
    verdict = clib.compare(y, case.ref, channels)        # the one pass rule
    clib.quantile(sorted_values, 0.5)

The library is $ROWFUSE_LIB, else the one installed with this package (rowfuse/_lib/).
Needs numpy, not torch and not a GPU.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from rowfuse.capi import cabi, locate

_LIB = None


class RowfuseError(RuntimeError):
    """A C call failed; the message is the library's status message."""


def library_path(env: str = "ROWFUSE_LIB", name: str = "librowfuse.so") -> str:
    """$env, else the library installed with this package (rowfuse.capi.locate)."""
    try:
        return locate.library(env, name)
    except locate.NotInstalled as e:
        raise RowfuseError(str(e)) from None


_STATUS_SIGS = {
    "rf_status_message": (ctypes.c_char_p, [ctypes.c_void_p]),
    "rf_status_free": (None, [ctypes.c_void_p]),
    "rf_allocator_system": (cabi.Allocator, []),
}


def bind(path: str, sigs: dict, what: str):
    """Loads a rowfuse shared library and declares `sigs` (name -> (restype, argtypes))
    plus the status functions on it."""
    try:
        handle = ctypes.CDLL(path)
    except OSError as e:
        raise RowfuseError(f"cannot load the {what} {path}: {e}") from e
    for name, (res, argtypes) in {**_STATUS_SIGS, **sigs}.items():
        fn = getattr(handle, name)
        fn.restype, fn.argtypes = res, argtypes
    return handle


def raise_status(handle, status, what: str) -> None:
    """Raises RowfuseError with the status's message (and frees it) when status is set."""
    if status:
        msg = handle.rf_status_message(status).decode(errors="replace")
        handle.rf_status_free(status)
        raise RowfuseError(f"{what}: {msg}")


def lib():
    global _LIB
    if _LIB is not None:
        return _LIB
    P, V, st = ctypes.POINTER, ctypes.c_void_p, ctypes.c_void_p
    sigs = {
        "rf_mlp_case_create": (
            st,
            [cabi.Allocator, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64]
            + [ctypes.c_int, P(cabi.MlpCase)],
        ),
        "rf_mlp_case_free": (None, [cabi.Allocator, P(cabi.MlpCase)]),
        "rf_mlp_tolerance_default": (cabi.Tolerance, []),
        "rf_mlp_compare": (
            None,
            [V, V, V, ctypes.c_double, ctypes.c_size_t, P(cabi.Tolerance), P(cabi.CompareResult)],
        ),
        "rf_mlp_compare_describe": (
            None,
            [P(cabi.CompareResult), ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t],
        ),
        "rf_bench_quantile_sorted": (ctypes.c_double, [V, ctypes.c_size_t, ctypes.c_double]),
        "rf_mlp_weights_hash": (None, [P(cabi.MlpWeights), ctypes.c_char_p]),
        "rf_mlp_reference": (
            st,
            [cabi.Allocator, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            + [V, V, V, V, V, P(cabi.Tensor)],
        ),
        "rf_tensor_free": (None, [cabi.Allocator, P(cabi.Tensor)]),
        "rf_mlp_error_bound": (
            st,
            [cabi.Allocator, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            + [V, V, V, V, V, V, V, V, P(ctypes.c_double)],
        ),
        "rf_mlp_error_model": (
            st,
            [cabi.Allocator, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            + [V, V, V, V, V, V, V, P(ctypes.c_double)],
        ),
        "rf_bench_summarize": (
            st,
            [cabi.Allocator, V, ctypes.c_size_t, P(cabi.BenchSummary)],
        ),
    }
    _LIB = bind(library_path(), sigs, "rowfuse library")
    return _LIB


def check(status, what: str) -> None:
    raise_status(lib(), status, what)


@dataclass
class MlpCase:
    """Inputs as the kernels take them (fp16 as numpy float16) and the reference Y."""

    x: np.ndarray  # [rows, C] float16
    w1: np.ndarray  # [C, H] float16
    b1: np.ndarray  # [H] float32
    w2: np.ndarray  # [H, C] float16
    b2: np.ndarray  # [C] float32
    ref: np.ndarray | None  # [rows, C] float32, mixed precision (H rounded to fp16)
    allow: np.ndarray | None  # [rows, C] float64: the error model's per-element allowance
    step: float  # ||ref - Y with H unrounded||: what the fp16 rounding of H moves
    seed: int


def _copy(ptr, n: int, dtype) -> np.ndarray:
    buf = (ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(ptr)
    return np.frombuffer(bytes(buf), dtype=dtype).copy()


def mlp_case(rows: int, channels: int, hidden: int, seed: int, reference: bool = True) -> MlpCase:
    """rf_mlp_case_create: the same seed gives the same numbers as every C caller."""
    c = cabi.MlpCase()
    a = lib().rf_allocator_system()
    check(
        lib().rf_mlp_case_create(a, rows, channels, hidden, seed, int(reference), ctypes.byref(c)),
        f"test case {rows}x{channels}x{hidden}",
    )
    try:
        return MlpCase(
            x=_copy(c.x, rows * channels, np.float16).reshape(rows, channels),
            w1=_copy(c.w1, channels * hidden, np.float16).reshape(channels, hidden),
            b1=_copy(c.b1, hidden, np.float32),
            w2=_copy(c.w2, hidden * channels, np.float16).reshape(hidden, channels),
            b2=_copy(c.b2, channels, np.float32),
            ref=_copy(c.ref, rows * channels, np.float32).reshape(rows, channels)
            if reference
            else None,
            allow=_copy(c.allow, rows * channels, np.float64).reshape(rows, channels)
            if reference
            else None,
            step=c.step,
            seed=seed,
        )
    finally:
        lib().rf_mlp_case_free(a, ctypes.byref(c))


def tolerance() -> cabi.Tolerance:
    return lib().rf_mlp_tolerance_default()


def compare(y: np.ndarray, case: MlpCase, tol=None) -> dict:
    """rf_mlp_compare of float32 outputs with a case's reference, allowance and step: the
    verdict, its figures and a message."""
    y = np.ascontiguousarray(y, dtype=np.float32)
    ref = np.ascontiguousarray(case.ref, dtype=np.float32)
    allow = np.ascontiguousarray(case.allow, dtype=np.float64)
    if y.size != ref.size:
        raise ValueError(f"output has {y.size} values, reference {ref.size}")
    t = tol if tol is not None else tolerance()
    r = cabi.CompareResult()
    lib().rf_mlp_compare(
        y.ctypes.data,
        ref.ctypes.data,
        allow.ctypes.data,
        case.step,
        y.size,
        ctypes.byref(t),
        ctypes.byref(r),
    )
    why = ctypes.create_string_buffer(256)
    lib().rf_mlp_compare_describe(ctypes.byref(r), ref.shape[-1], why, 256)
    return {
        "passed": bool(r.passed),
        "nonfinite": r.nonfinite,
        "out_of_tol": r.out_of_tol,
        "rel_l2": r.rel_l2,
        "steps": r.steps,
        "max_allow_ratio": r.max_ratio,
        "max_abs": r.max_abs,
        "tol": {"step_fraction": t.step_fraction, "allow_factor": t.allow_factor},
        "message": why.value.decode(),
    }


def quantile(sorted_values, q: float) -> float:
    """rf_bench_quantile_sorted (linear between closest ranks, numpy's 'type 7')."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must be in [0, 1], got {q}")
    arr = np.ascontiguousarray(sorted_values, dtype=np.float64)
    return float(lib().rf_bench_quantile_sorted(arr.ctypes.data, n, q))


def reference(x, w1, b1, w2, b2, mixed: bool = False) -> np.ndarray:
    """rf_mlp_reference (the CPU interpreter) on fp16 X [M,C], W1 [C,H], W2 [H,C] and f32
    biases: Y [M, C] float64 in fp64, or float32 in the plan's mixed precision."""
    x, w1, w2 = (np.ascontiguousarray(a, dtype=np.float16) for a in (x, w1, w2))
    b1, b2 = (np.ascontiguousarray(a, dtype=np.float32) for a in (b1, b2))
    (m, c), h = x.shape, w1.shape[1]
    out, a = cabi.Tensor(), lib().rf_allocator_system()
    ptrs = (x.ctypes.data, w1.ctypes.data, b1.ctypes.data, w2.ctypes.data, b2.ctypes.data)
    precision = cabi.RF_PRECISION_MIXED if mixed else cabi.RF_PRECISION_FP64
    check(
        lib().rf_mlp_reference(a, precision, m, c, h, *ptrs, ctypes.byref(out)),
        "the CPU reference",
    )
    try:
        dtype, code = (np.float32, cabi.RF_DTYPE_F32) if mixed else (np.float64, cabi.RF_DTYPE_F64)
        if out.dtype != code or out.nbytes != m * c * np.dtype(dtype).itemsize:
            raise RowfuseError("the CPU reference returned an unexpected tensor")
        return _copy(out.data, m * c, dtype).reshape(m, c)
    finally:
        lib().rf_tensor_free(a, ctypes.byref(out))


def summarize(values) -> dict:
    """rf_bench_summarize: count, median, p10, p90, mean, min, max and the bootstrap 95%
    interval of the median (median_ci_lo, median_ci_hi), as the C bench writes them."""
    arr = np.ascontiguousarray(values, dtype=np.float64)
    out = cabi.BenchSummary()
    check(
        lib().rf_bench_summarize(
            lib().rf_allocator_system(), arr.ctypes.data, arr.size, ctypes.byref(out)
        ),
        "summarize",
    )
    d = {k: getattr(out, k) for k, _ in cabi.BenchSummary._fields_}
    d["median_ci_lo"], d["median_ci_hi"] = d.pop("median_lo"), d.pop("median_hi")
    return d


def case_of(x, w1, b1, w2, b2) -> MlpCase:
    """A case for given inputs and weights (fp16 X, W1, W2; f32 biases): the mixed
    reference (rf_mlp_reference) and the error model (rf_mlp_error_model) for them."""
    x, w1, w2 = (np.ascontiguousarray(a, dtype=np.float16) for a in (x, w1, w2))
    b1, b2 = (np.ascontiguousarray(a, dtype=np.float32) for a in (b1, b2))
    ref = np.ascontiguousarray(reference(x, w1, b1, w2, b2, mixed=True), dtype=np.float32)
    (m, c), h = x.shape, w1.shape[1]
    allow, step = np.empty((m, c), dtype=np.float64), ctypes.c_double()
    ptrs = [a.ctypes.data for a in (x, w1, b1, w2, b2, ref, allow)]
    check(
        lib().rf_mlp_error_model(lib().rf_allocator_system(), m, c, h, *ptrs, ctypes.byref(step)),
        "the error model",
    )
    return MlpCase(x, w1, b1, w2, b2, ref, allow, step.value, seed=-1)


RF_MLP_ACC_TENSOR_CORE, RF_MLP_ACC_ANY_ORDER = 0, 1  # rf_mlp_accumulation_t


def error_bound(x, w1, b1, w2, b2, dx=None, any_order: bool = False) -> np.ndarray:
    """rf_mlp_error_bound: per element of Y [M, C], how far a correct implementation may be
    from the mixed reference (src/harness/README.md). any_order: fp32 sums in any order (IREE)
    instead of the tensor cores' k16 steps; dx (>= 0, x's shape): how far the other side's
    input may be from x, carried through W1 and the residual."""
    x, w1, w2 = (np.ascontiguousarray(a, dtype=np.float16) for a in (x, w1, w2))
    b1, b2 = (np.ascontiguousarray(a, dtype=np.float32) for a in (b1, b2))
    (m, c), h = x.shape, w1.shape[1]
    d = None if dx is None else np.ascontiguousarray(dx, dtype=np.float64)
    if d is not None and d.shape != x.shape:
        raise ValueError(f"dx has shape {d.shape}, x {x.shape}")
    allow = np.empty((m, c), dtype=np.float64)
    model = RF_MLP_ACC_ANY_ORDER if any_order else RF_MLP_ACC_TENSOR_CORE
    ptrs = [x.ctypes.data, None if d is None else d.ctypes.data]
    ptrs += [a.ctypes.data for a in (w1, b1, w2, b2)] + [None, allow.ctypes.data]
    check(
        lib().rf_mlp_error_bound(lib().rf_allocator_system(), model, m, c, h, *ptrs, None),
        "the error bound",
    )
    return allow


def weights_hash(w1, b1, w2, b2) -> str:
    """rf_mlp_weights_hash of fp16 W1 [C,H], W2 [H,C] and f32 biases (plan.json graph_hash)."""
    w1 = np.ascontiguousarray(w1, dtype=np.float16)
    w2 = np.ascontiguousarray(w2, dtype=np.float16)
    b1 = np.ascontiguousarray(b1, dtype=np.float32)
    b2 = np.ascontiguousarray(b2, dtype=np.float32)
    c, h = w1.shape
    w = cabi.MlpWeights(c, h, w1.ctypes.data, w2.ctypes.data, b1.ctypes.data, b2.ctypes.data)
    out = ctypes.create_string_buffer(17)
    lib().rf_mlp_weights_hash(ctypes.byref(w), out)
    return out.value.decode()
