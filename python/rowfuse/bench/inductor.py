"""torch.compile as a peer at full strength, with the block's numerics.

The block is fp16 operands, fp32 accumulation, b1 added in fp32 before the ReLU, H rounded
to fp16 once, Y in fp32. Several formulations compute exactly that and give Inductor
different graphs to work with:

  mm-fp32      torch.mm(a, b, out_dtype=float32) (cuBLAS, fp32 result), bias and ReLU after;
  addmm-fp32   torch.addmm(bias, a, b, out_dtype=float32): the bias inside the GEMM, in fp32;
  upcast-tf32  X and W1 upcast to fp32 (exact) and multiplied by an fp32 GEMM with TF32
               allowed: every fp16 value is exact in TF32 (10 mantissa bits, fp32's
               exponent range), products of two are exact in fp32 and accumulate in fp32,
               so this is the same function, and Inductor may fuse the casts into its GEMM
               template's loads and b1, the ReLU and H's rounding into its epilogue. The
               second product stays an fp16 GEMM with fp32 out: upcasting H as well would
               let Inductor drop H's fp32 -> fp16 -> fp32 round trip as pointless (its
               joint-graph pass does), leaving H unrounded, another function.

A formulation that rounds X W1 to fp16 before adding b1 (an fp16-output mm) computes
another function and is never a candidate (`rounded_first`, used by the tests that show
the check rejects it).

Candidates (`CANDIDATES`) pair a formulation with Inductor settings a careful user tries
(coordinate-descent tuning of the generated kernels, Hopper's persistent TMA GEMM
templates), every one with Inductor's emulate_precision_casts on (below); each is
compiled fresh (its own code object, Inductor's caches off), checked against the
reference (a candidate that fails is recorded and never kept), and timed by the
published metric, the GPU span (CUPTI) of a CUDA graph replay. The fastest is kept and
the record says which, with every candidate's compile time and span. A per-shape budget
bounds the compiles: once it is spent, the remaining candidates are recorded as skipped.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import types

# Every candidate keeps Inductor's emulate_precision_casts on, so that a fused kernel
# rounds to fp16 where the formulation says (H) instead of keeping the fp32 value; the
# check catches any candidate that still does not (H unrounded is about 2.5 steps off).
_EXACT = {"emulate_precision_casts": True}
_CD = {"coordinate_descent_tuning": True}
# (name, formulation, Inductor config patch), cheapest compiles first; the first two are
# always compiled
CANDIDATES = [
    ("mm-fp32", "mm-fp32", {**_EXACT}),
    ("mm-fp32+cd", "mm-fp32", {**_EXACT, **_CD}),
    ("addmm-fp32+cd", "addmm-fp32", {**_EXACT, **_CD}),
    ("upcast-tf32+cd", "upcast-tf32", {**_EXACT, **_CD}),
    (
        "upcast-tf32+cd+tma",
        "upcast-tf32",
        {**_EXACT, **_CD, "triton.enable_persistent_tma_matmul": True},
    ),
]
CANDIDATE_NAMES = [c[0] for c in CANDIDATES]
ALWAYS = 2  # candidates compiled whatever the budget says
SPAN_REPLAYS = 20


# ---------------------------------------------------------------- formulations (CPU-safe)


def _mm32(a, b):
    """fp16 operands, fp32 output: cuBLAS with an fp32 result on the GPU (out_dtype); on the
    CPU, where that overload does not exist, the same products in fp32 (tests)."""
    import torch

    if a.is_cuda:
        return torch.mm(a, b, out_dtype=torch.float32)
    return torch.mm(a.float(), b.float())


def _addmm32(bias, a, b):
    """bias + a b with fp16 a, b, an fp32 bias and an fp32 result, the bias in the GEMM."""
    import torch

    if a.is_cuda:
        return torch.addmm(bias, a, b, out_dtype=torch.float32)
    return torch.addmm(bias, a.float(), b.float())


def mm_fp32(x, w1, b1, w2, b2, y):
    import torch

    h = torch.relu(_mm32(x, w1) + b1).half()
    y.copy_(torch.relu(_mm32(h, w2) + b2 + x.float()))


def addmm_fp32(x, w1, b1, w2, b2, y):
    import torch

    h = torch.relu(_addmm32(b1, x, w1)).half()
    y.copy_(torch.relu(_addmm32(b2, h, w2) + x.float()))


def upcast_tf32(x, w1, b1, w2, b2, y):
    import torch

    h = torch.relu(torch.mm(x.float(), w1.float()) + b1).half()
    y.copy_(torch.relu(_mm32(h, w2) + b2 + x.float()))


def rounded_first(x, w1, b1, w2, b2, y):
    """NOT the block: X W1 rounded to fp16 (an fp16-output GEMM) before b1 is added. Kept
    only so that tests can show the check rejects it."""
    import torch

    a = torch.mm(x, w1) if x.is_cuda else torch.mm(x.float(), w1.float()).half()
    h = torch.relu(a.float() + b1).half()
    y.copy_(torch.relu(_mm32(h, w2) + b2 + x.float()))


FORMULATIONS = {"mm-fp32": mm_fp32, "addmm-fp32": addmm_fp32, "upcast-tf32": upcast_tf32}


@contextlib.contextmanager
def tf32(on: bool):
    """TF32 for fp32 GEMMs while inside (the upcast formulation only; exact for fp16
    operands, see above); the previous setting comes back after."""
    import torch

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = on or prev
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def fresh_code(fn, tag: str):
    """fn under a code object of its own. Dynamo keeps compiled code per code object, so
    torch.compile of a fresh copy compiles anew while earlier copies stay compiled and
    callable (torch._dynamo.reset() would throw them away)."""
    name = f"{fn.__name__}_{tag}".replace("-", "_").replace("+", "_")
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, fn.__globals__, name)


# ---------------------------------------------------------------- compiling (needs CUDA)


def compile_fresh(mode: str, fn, call_args, patch: dict):
    """torch.compile(fn) and its first call (where Inductor compiles and, in the
    max-autotune modes, benchmarks its choices) with Inductor's caches off, a fresh cache
    directory and `patch` applied to Inductor's config."""
    import torch

    try:
        from torch._inductor.utils import fresh_cache
    except ImportError:  # older torch: the config switch alone
        fresh_cache = contextlib.nullcontext
    with fresh_cache(), torch._inductor.config.patch(force_disable_caches=True, **patch):
        compiled = torch.compile(fn, mode=mode, dynamic=False)
        compiled(*call_args)
        torch.cuda.synchronize()
    return compiled


def _first_line(e: BaseException) -> str:
    """The error's type and its first lines, collapsed (a wrapped error such as Dynamo's
    names its cause on a later line), at most 300 characters."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' | '.join(lines[:3])}"[:300]


def choose(mode, call_args, check, measure, budget_s: float, compile_fn=compile_fresh, only=None):
    """Compiles the candidates in order (the first ALWAYS whatever the budget, the rest
    while less than budget_s has gone), checks each (`check(callable) -> None or the
    reason it fails`), times the ones that pass together (`measure([callables]) ->
    [median span us]`) and keeps the fastest. `only` restricts to named candidates.
    Returns (callable or None, record)."""
    t0 = time.perf_counter()
    runs, fns = [], []
    todo = [c for c in CANDIDATES if only is None or c[0] in only]
    for i, (name, form, patch) in enumerate(todo):
        run = {"name": name, "formulation": form, "inductor": dict(patch)}
        runs.append(run)
        fns.append(None)
        if i >= ALWAYS and time.perf_counter() - t0 > budget_s:
            run["skipped"] = f"compile budget of {budget_s:g} s spent"
            continue
        t1 = time.perf_counter()
        try:
            with tf32(form == "upcast-tf32"):
                compiled = compile_fn(mode, fresh_code(FORMULATIONS[form], name), call_args, patch)
        except Exception as e:  # recorded; another candidate may still serve
            run["compile_s"] = round(time.perf_counter() - t1, 2)
            run["error"] = _first_line(e)
            continue
        run["compile_s"] = round(time.perf_counter() - t1, 2)

        def call(c=compiled, on=form == "upcast-tf32"):
            with tf32(on):
                c(*call_args)

        why = check(call)
        if why:
            run["error"] = f"check: {why}"
            continue
        fns[i] = call
    ok = [i for i, f in enumerate(fns) if f is not None]
    rec = {
        "mode": mode,
        "method": "candidates (formulation x Inductor settings) compiled fresh (own code "
        "object, Inductor caches off), each checked, then timed together by the median GPU "
        f"span (CUPTI) of {SPAN_REPLAYS} synchronized CUDA graph replays; the fastest kept",
        "metric": "graph-replay GPU span (CUPTI), median",
        "budget_s": budget_s,
        "candidates": runs,
    }
    if ok:
        try:
            times = measure([fns[i] for i in ok])
        except Exception as e:
            rec["error"] = f"timing: {_first_line(e)}"
            ok = []
        else:
            for i, us in zip(ok, times, strict=True):
                runs[i]["span_us"] = round(us, 3)
    rec["tune_s"] = round(time.perf_counter() - t0, 2)
    if not ok:
        return None, rec
    best = min(ok, key=lambda i: runs[i]["span_us"])
    rec["chosen"] = best
    rec["chosen_name"] = runs[best]["name"]
    rec["chosen_us"] = runs[best]["span_us"]
    return fns[best], rec


def measure_spans(calls, count_kernels, replays: int = SPAN_REPLAYS) -> list[float]:
    """Median GPU span of each callable's CUDA graph replay (rowfuse.bench.spans)."""
    from rowfuse.bench import spans

    captured = [spans.capture_graph(c, count_kernels) for c in calls]
    per = spans.graph_replay_spans([g for g, _ in captured], [n for _, n in captured], replays)
    del captured
    return [statistics.median(s) for s in per]
