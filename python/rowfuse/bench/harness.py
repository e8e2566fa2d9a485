"""One-process comparison of every variant of the residual MLP block (docs/benchmarking.md).

    python -m rowfuse.bench --shapes 49x48x96,64x64x128 -o run.json

For each shape (rows x channels x hidden), in one process on one GPU, with fresh random
inputs (seed recorded) resident on the device, every variant is captured once in a CUDA
Graph and checked before timing: the graph must hold at least one kernel node (a graph
that captured nothing, its work sent to another stream, is refused in the C runtime's
words: "a kernel was launched outside the capturing stream"), the output is poisoned with
NaN, the graph replayed, and the output must pass the one comparison rule (rowfuse/mlp.h,
through librowfuse.so) against the CPU reference in the plan's mixed precision. Inputs
come from the one seeded generator C uses (rowfuse.capi.clib.mlp_case), so a seed means
the same numbers in both.

Then, as the C host does: 5 rounds x 200 observations per variant, the variants of each
observation in a seeded shuffled order, with CUPTI recording (torch.profiler, CUDA
activity) while they are timed: (a) the CUDA-event interval around a replay, (b) host
completion (host clock from just before the launch call to the return of the
synchronize), and (c) the GPU span of that very replay, its CUPTI kernel records
attributed to it by correlation id (src/base/span_attr.c through librowfuse.so;
rowfuse.bench.spans). A control round of --control-obs observations with CUPTI off gives
(a) and (b) without it (event_us_no_cupti, host_us_no_cupti). Then the eager launches
(no graph, CUPTI off) and (d) back-to-back: N replays between two events, over N. Writes
JSON (schema rowfuse-bench/1, method.span_source "timed-observations"), and prints the
markdown table of rowfuse.bench.report at the end.

Variants (the Python host's own table, with its own floor): empty (floor), PyTorch eager,
torch.compile (the fastest of several exact formulations and Inductor settings,
rowfuse.bench.inductor), a hand-written Triton fused kernel autotuned per shape on the
published metric (rowfuse.bench.triton_fused.tune) and XLA (jax.jit, rowfuse.bench.xla;
run when jax imports, a FAILED row when asked for by --variants and it does not). XLA
launches on its own stream: no graph of ours, no CUDA events around it (its event
interval is "-"), its output checked as returned (nothing to poison), its span from the
CUPTI records of the same interleaved observations that are not our graph replays ("order"
attribution). Each peer's tuning is recorded in its result's "tuning".
rowfuse's variants and cuBLASLt run from C (`rowfuse bench --c`), whose host costs differ;
the report keeps the two tables apart. A variant that cannot run is recorded with the
reason, never dropped silently.

The statistics helpers (quantile, summarize) need no GPU and no torch; the quantile is
the C one (src/base/stats.c).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import subprocess
import sys
import time

SCHEMA = "rowfuse-bench/1"
DEV_SHAPES = "49x48x96,64x64x128,1000x96x200,4096x128x512,131072x32x64,8192x512x2048"

# (name, label, how it is launched)
VARIANTS = [
    ("empty", "empty kernel (floor)", "triton"),
    ("torch-eager", "PyTorch eager + graph", "torch"),
    ("torch-compile", "torch.compile + graph", "torch"),
    ("triton-fused", "Triton fused + graph", "triton"),
    ("xla", "XLA (jax.jit)", "jax"),
]
VARIANT_NAMES = [v[0] for v in VARIANTS]


# ---------------------------------------------------------------- statistics (no GPU)


def quantile(sorted_values, q: float) -> float:
    """Quantile q in [0, 1] of an ascending sequence: src/base/stats.c's, through ctypes."""
    from rowfuse.capi import clib

    return clib.quantile(sorted_values, q)


def summarize(values) -> dict:
    """{count, median, p10, p90, mean, min, max, median_ci_lo, median_ci_hi} of a non-empty
    sequence of finite numbers: src/base/stats.c's summary, through ctypes."""
    from rowfuse.capi import clib

    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("summarize: no observations")
    if any(not math.isfinite(v) for v in vals):
        raise ValueError("summarize: non-finite observation")
    return clib.summarize(vals)


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """'49x48x96,64x64x128' -> [(49, 48, 96), (64, 64, 128)]."""
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"shape '{item}' is not ROWSxCHANNELSxHIDDEN with positive integers")
        shapes.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return shapes


# ---------------------------------------------------------------- environment


def git_revision() -> str:
    rev = os.environ.get("ROWFUSE_GIT_REV")
    if rev:
        return rev
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def gpu_clocks() -> dict:
    """Clocks and driver as nvidia-smi reports them now (empty dict if it cannot)."""
    fields = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    vals = [v.strip() for v in out.stdout.splitlines()[0].split(",")]
    keys = ["name", "driver", "sm_mhz", "mem_mhz", "max_sm_mhz", "max_mem_mhz", "power_w"]
    return dict(zip(keys, vals, strict=False))


def progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- inputs and reference


def make_inputs(rows: int, channels: int, hidden: int, seed: int):
    """The one generator's inputs (rowfuse.capi.clib.mlp_case) as CPU tensors x, w1, b1, w2, b2,
    and the case (mixed-precision reference, error allowance, step)."""
    import torch

    from rowfuse.capi import clib

    c = clib.mlp_case(rows, channels, hidden, seed)
    tensors = tuple(torch.from_numpy(a) for a in (c.x, c.w1, c.b1, c.w2, c.b2))
    return tensors, c


# ---------------------------------------------------------------- variants


class Variant:
    """One way of computing the block: `launch()` enqueues it on torch's current stream
    and writes `y` (None for the empty floor). kind "graph": replayed from a CUDA graph of
    ours; "foreign": launched by another runtime on its own stream (XLA), one observation
    being the call and its wait, its output from `output()`."""

    def __init__(self, name, label, launch, y, note="", kind="graph", output=None):
        self.name, self.label, self.launch, self.y, self.note = name, label, launch, y, note
        self.kind, self.output = kind, output
        self.kernels_min = 1  # kernel nodes its captured graph must hold
        self.kernels = None  # kernels per observation (graph nodes, or calibrated)
        self.graph = None
        self.result = {"name": name, "label": label, "note": note}


def torch_eager_block(x, w1, b1, w2, b2, y):
    """The block as a PyTorch user writes it for these precisions (cuBLAS GEMMs with fp16
    operands and fp32 outputs, so b1 is added before H is rounded, as the block defines;
    `torch.mm(..., out_dtype=torch.float32)`: an fp16-output mm would round X W1 to fp16
    first and compute another function, which the gate rejects)."""
    import torch

    from rowfuse.bench.inductor import _mm32

    h = torch.relu(_mm32(x, w1) + b1).half()
    t = _mm32(h, w2) + b2 + x.float()
    torch.clamp(t, min=0.0, out=y)  # ReLU into the caller's buffer (relu has no out=)


def wanted_variants(args) -> set | None:
    """The peers --variants names (None: every peer; XLA then only where jax imports)."""
    return set(args.variants.split(",")) if getattr(args, "variants", None) else None


def build_variants(args, shape, dev, cpu_inputs, ref=None):
    """The Python host's variants on device copies of the inputs: the floor, PyTorch eager
    as users run it, torch.compile (the fastest checked candidate), the Triton fused kernel
    (autotuned for the shape; with `ref` every configuration must pass the check before it
    may be chosen) and XLA. The peers' tuning goes into each variant's result["tuning"]."""
    import torch

    from rowfuse.bench import triton_fused

    rows, channels, hidden = shape
    x, w1, b1, w2, b2 = (t.to(dev) for t in cpu_inputs)
    out = []

    def ybuf():
        return torch.empty(rows, channels, dtype=torch.float32, device=dev)

    out.append(Variant("empty", VARIANTS[0][1], triton_fused.empty, None))
    # --variants: only the named peers (the floor always), so that what runs before each
    # observation is one of them
    chosen = wanted_variants(args)

    def wanted(name):
        return chosen is None or name in chosen

    if wanted("torch-eager"):
        y = ybuf()

        def eager(y=y):
            torch_eager_block(x, w1, b1, w2, b2, y)

        fault = getattr(args, "plant_fault", None)
        out.append(
            Variant(
                "torch-eager",
                VARIANTS[1][1],
                plant_wrong_stream(eager, fault) if fault else eager,
                y,
                note=f"planted fault {fault} (tests of the capture check)" if fault else "",
            )
        )
    if wanted("torch-compile"):
        out.append(_compile_variant(args, x, w1, b1, w2, b2, ybuf(), shape, ref))
    if wanted("triton-fused"):
        out.append(_triton_variant(x, w1, b1, w2, b2, ybuf(), ref, shape))
    xv = _xla_variant(cpu_inputs, shape, asked=chosen is not None and "xla" in chosen)
    if xv is not None and wanted("xla"):
        out.append(xv)
    return out


def _check_call(call, y, case) -> str | None:
    """None when `call` writes into a NaN-poisoned y an output that passes the comparison
    rule, else the reason (for the compile candidates: checked before they may be kept)."""
    import torch

    from rowfuse.capi import clib

    if case is None:
        return None
    y.fill_(float("nan"))
    call()
    torch.cuda.synchronize()
    verdict = clib.compare(y.cpu().numpy(), case)
    return None if verdict["passed"] else verdict["message"]


def _compile_variant(args, x, w1, b1, w2, b2, y, shape, case=None):
    """torch.compile of the block: the fastest checked candidate (rowfuse.bench.inductor)."""
    from rowfuse.bench import inductor

    rows, channels, hidden = shape
    t0 = time.perf_counter()
    only = set(args.compile_candidates.split(",")) if args.compile_candidates else None
    compiled, rec = inductor.choose(
        args.compile_mode,
        (x, w1, b1, w2, b2, y),
        lambda call: _check_call(call, y, case),
        lambda calls: inductor.measure_spans(calls, graph_kernel_nodes),
        args.compile_budget_s,
        only=only,
    )
    if compiled is None:
        errors = "; ".join(
            f"{r['name']}: {r.get('error', r.get('skipped', '?'))}" for r in rec["candidates"]
        )
        errors = rec.get("error") or errors
        v = Variant("torch-compile", VARIANTS[2][1], None, None, note=f"compile failed: {errors}")
    else:
        tried = [r for r in rec["candidates"] if "span_us" in r]
        v = Variant(
            "torch-compile",
            VARIANTS[2][1],
            compiled,
            y,
            note=f"mode {args.compile_mode}, {rec['chosen_name']}: the fastest of "
            f"{len(tried)} checked candidates ({rec['chosen_us']:.2f} us span)",
        )
    v.result["compile_s"] = round(time.perf_counter() - t0, 2)
    v.result["tuning"] = rec
    progress(f"{rows}x{channels}x{hidden}: torch-compile: {v.note}")
    for r in rec["candidates"]:
        what = r.get("error") or r.get("skipped") or f"{r.get('span_us', '?')} us"
        progress(f"  {r['name']}: {r.get('compile_s', '-')} s compile, {what}")
    return v


def _triton_variant(x, w1, b1, w2, b2, y, ref, shape):
    """The hand-written Triton fused kernel, autotuned for the shape on the published
    metric (the GPU span of a graph replay)."""
    from rowfuse.bench import triton_fused

    rows, channels, hidden = shape
    try:
        rec = triton_fused.tune(x, w1, b1, w2, b2, y, ref=ref)
        cfg = triton_fused.chosen_config(rec)
        v = Variant(
            "triton-fused",
            VARIANTS[3][1],
            lambda y=y, c=cfg: triton_fused.launch(c, x, w1, b1, w2, b2, y),
            y,
            note=f"autotuned on the graph-replay span: {rec['chosen_label']}, fastest of "
            f"{rec['timed']} timed ({rec['space']} in the space, {rec['compiled']} compiled)",
        )
        v.result["tuning"] = rec
    except Exception as e:
        v = Variant("triton-fused", VARIANTS[3][1], None, None, note=f"tuning failed: {e}")
    progress(f"{rows}x{channels}x{hidden}: triton-fused: {v.note}")
    return v


def _xla_variant(cpu_inputs, shape, asked: bool):
    """XLA (jax.jit) on its own copies of the inputs, its kernels per call calibrated under
    CUPTI; None when jax is missing and nobody asked for it (a FAILED row when asked)."""
    from rowfuse.bench import xla

    rows, channels, hidden = shape
    why = xla.available()
    if why:
        if not asked:
            return None
        v = Variant("xla", VARIANTS[4][1], None, None, note=why, kind="foreign")
        progress(f"{rows}x{channels}x{hidden}: xla: {why}")
        return v
    try:
        blk = xla.XlaBlock(*(t.numpy() for t in cpu_inputs))
        xla.calibrate(blk)
        v = Variant(
            "xla",
            VARIANTS[4][1],
            blk.call,
            None,
            note=f"jax {blk.jax_version}, XLA_FLAGS {blk.tuning()['xla_flags']}; its own "
            f"stream, {blk.kernels} kernel(s) per call",
            kind="foreign",
            output=blk.output,
        )
        v.kernels = blk.kernels
        v.result["tuning"] = blk.tuning()
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0][:300]
        v = Variant("xla", VARIANTS[4][1], None, None, note=f"XLA failed: {first}", kind="foreign")
    progress(f"{rows}x{channels}x{hidden}: xla: {v.note}")
    return v


# ---------------------------------------------------------------- capture, check, time

OUTSIDE_STREAM = "a kernel was launched outside the capturing stream"


class CaptureRefused(RuntimeError):
    """A variant's captured graph lacks its kernels, or the capture itself failed."""


def capture_refusal(name: str, expected_min: int, found: int) -> str | None:
    """The refusal of a captured graph with fewer kernel nodes than its variant launches,
    in the words of the C runtime (src/runtime/variant.c), or None when there are enough.
    The Python peers' kernel counts vary (cuBLAS, Inductor and Triton choose), so each
    expects at least one."""
    if found >= expected_min:
        return None
    return (
        f"{name}: kernel nodes in the captured graph: expected at least {expected_min}, "
        f"found {found}: {OUTSIDE_STREAM} (on another stream, the legacy default stream or "
        "the per-thread default stream), so it ran once during the capture and is not in "
        "the graph"
    )


def capture_failure(name: str, error: BaseException) -> str:
    """The message for a capture CUDA itself refused, with its likely cause named."""
    text = str(error)
    if "captur" in text.lower():
        return (
            f"{name}: the CUDA Graph capture failed: {text.strip()} (likely cause: "
            f"{OUTSIDE_STREAM}, e.g. on the legacy default stream, which waits for every "
            "blocking stream, or work during the capture that a capture does not allow, "
            "such as a synchronize or an allocation on another stream)"
        )
    return f"{name}: the CUDA Graph capture failed: {text.strip()}"


def graph_kernel_nodes(graph_handle: int) -> int:
    """Kernel nodes of a captured CUDA graph (a cudaGraph_t as an int), child graphs
    included, read through the driver API."""
    from cuda.bindings import driver

    def ok(result):
        err = result[0]
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"counting a graph's kernel nodes: {err.name}")
        return result[1:]

    def count(graph) -> int:
        (_, n) = ok(driver.cuGraphGetNodes(graph, 0))
        if n == 0:
            return 0
        nodes, _ = ok(driver.cuGraphGetNodes(graph, n))
        total = 0
        for node in nodes:
            (kind,) = ok(driver.cuGraphNodeGetType(node))
            if kind == driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
                total += 1
            elif kind == driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_GRAPH:
                (child,) = ok(driver.cuGraphChildGraphNodeGetGraph(node))
                total += count(child)
        return total

    return count(driver.CUgraph(graph_handle))


# Tests of the capture check only (--plant-fault): the stream a faulty launcher uses
# instead of the current one, as in `rowfuse compile --plant-fault`.
WRONG_STREAMS = ("wrong-stream-created", "wrong-stream-legacy", "wrong-stream-per-thread")


def plant_wrong_stream(launch, fault: str):
    """`launch` with its work sent to another stream: one it created, the legacy default
    stream, or the per-thread default stream (cudaStreamPerThread, handle 2). The warm-up
    runs there too, so the caching allocator holds that stream's blocks before capture."""
    import torch

    if fault == "wrong-stream-created":
        stream = torch.cuda.Stream()
    elif fault == "wrong-stream-legacy":
        stream = torch.cuda.default_stream()
    elif fault == "wrong-stream-per-thread":
        stream = torch.cuda.ExternalStream(2)
    else:
        raise ValueError(f"--plant-fault must be one of {', '.join(WRONG_STREAMS)}, not {fault}")

    def wrong():
        with torch.cuda.stream(stream):
            launch()

    return wrong


def refuse_short_graph(v, graph_handle: int, count_kernels=graph_kernel_nodes) -> int:
    """Counts the kernel nodes of v's captured graph; raises CaptureRefused when there are
    fewer than v.kernels_min. Returns the count."""
    found = count_kernels(graph_handle)
    refusal = capture_refusal(v.name, v.kernels_min, found)
    if refusal:
        raise CaptureRefused(refusal)
    return found


def capture(v, warmup: int = 3) -> None:
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            v.launch()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)  # the cudaGraph_t stays readable: its nodes
    try:
        with torch.cuda.graph(g):
            v.launch()
    except RuntimeError as e:
        raise CaptureRefused(capture_failure(v.name, e)) from None
    torch.cuda.synchronize()
    v.result["kernel_nodes"] = refuse_short_graph(v, g.raw_cuda_graph())
    g.instantiate()
    v.graph = g


def check(v, case) -> None:
    """Poison y with NaN, replay the graph, apply the one comparison rule (rowfuse/mlp.h).
    A foreign variant (XLA) returns a fresh array per call: nothing to poison, so its
    output is compared as returned."""
    import torch

    from rowfuse.capi import clib

    if v.kind == "foreign":
        verdict = clib.compare(v.output(), case)
        verdict["note"] = "output compared as returned (a fresh array per call: no poison)"
        v.result["check"] = verdict
        if not verdict["passed"]:
            v.result["error"] = f"XLA's output: {verdict['message']}"
        return
    if v.y is None:
        v.result["check"] = {"passed": True, "note": "no output (floor)"}
        return
    v.y.fill_(float("nan"))
    v.graph.replay()
    torch.cuda.synchronize()
    verdict = clib.compare(v.y.cpu().numpy(), case)
    v.result["check"] = verdict
    if not verdict["passed"]:
        v.result["error"] = f"replay into a NaN-poisoned Y: {verdict['message']}"


def interleaved_order(n: int, rounds: int, obs: int, seed: int) -> list[int]:
    """The variant of every observation in execution order: rounds x obs passes, each pass
    every variant once in a seeded shuffled order (drift and warm-up fall on all alike)."""
    import random

    rng = random.Random(seed)
    seq = []
    for _ in range(rounds * obs):
        order = list(range(n))
        rng.shuffle(order)
        seq.extend(order)
    return seq


def time_interleaved(
    variants, rounds: int, obs: int, eager: bool, seed: int, cupti=False, flush=None
):
    """rounds x obs observations per variant in interleaved_order: event interval and host
    completion of each. Graph variants replay their graph (eager: launch), foreign ones
    call and wait (no events on their stream: event None). With cupti, CUPTI records the
    whole pass and each observation's GPU span is attributed to it (rowfuse.bench.spans).
    With flush (an L2Flush), its captured graph is replayed and waited for before every
    observation, outside the events and the host clock, its kernel records attributed to
    it and dropped: a cold L2 for every observation.
    Returns {name: {"event": [...], "host": [...], "span": [...] or None}, "_span": the
    attribution or None}."""
    import torch

    from rowfuse.bench import spans

    stream = torch.cuda.current_stream()
    seq = interleaved_order(len(variants), rounds, obs, seed)
    ev = [[] for _ in variants]
    host = [[] for _ in variants]
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    fns = [v.launch if eager or v.kind == "foreign" else v.graph.replay for v in variants]
    session = spans.CuptiSession() if cupti else contextlib.nullcontext()
    done = []  # the observations in order, -1 for a flush
    with session:
        for i in seq:
            if flush is not None:
                flush.graph.replay()
                stream.synchronize()
                done.append(-1)
            done.append(i)
            fn = fns[i]
            if variants[i].kind == "foreign":
                t0 = time.perf_counter_ns()
                fn()  # the call and its wait
                t1 = time.perf_counter_ns()
            else:
                t0 = time.perf_counter_ns()
                e0.record(stream)
                fn()
                e1.record(stream)
                e1.synchronize()
                t1 = time.perf_counter_ns()
                ev[i].append(e0.elapsed_time(e1) * 1000.0)
            host[i].append((t1 - t0) / 1000.0)
    out = {v.name: {"event": ev[i], "host": host[i], "span": None} for i, v in enumerate(variants)}
    out["_span"] = None
    if cupti:
        attribute_spans(out, session.trace, variants, done, flush)
    return out


def attribute_spans(out, trace, variants, done, flush=None) -> None:
    """Each observation's GPU span from the CUPTI trace of a pass, appended to
    out[name]["span"] (and its kernel names to out[name]["names"]), the attribution in
    out["_span"]. done: the observations in the order they ran, a variant's index or -1 for
    a replay of flush's graph (attributed like any graph replay, then dropped)."""
    from rowfuse.bench import spans

    att = spans.attribute_observations(
        trace,
        [flush.kind if i < 0 else variants[i].kind for i in done],
        [flush.kernels if i < 0 else variants[i].kernels for i in done],
    )
    out["_span"] = att
    for j, i in enumerate(done):
        if i < 0:
            continue
        rec = out[variants[i].name]
        if rec["span"] is None:
            rec["span"] = []
            rec["names"] = att.names.get(j, [])
        rec["span"].append(att.spans[j])


def _summary_or_none(values):
    return summarize(values) if values else None


def record_timing(variants, timed, key: str) -> None:
    """Summaries of one interleaved pass into each variant's result[key] (graph/eager)."""
    for v in variants:
        t = timed[v.name]
        r = v.result.setdefault(key, {})
        r["event_us"] = _summary_or_none(t["event"])
        r["host_us"] = summarize(t["host"])


def record_spans(variants, timed, key: str = "graph") -> None:
    """The attributed spans of the timed graph pass into result[key]["span_us"]; a
    variant whose observations could not all be attributed gets the attribution's error."""
    att = timed["_span"]
    for v in variants:
        t = timed[v.name]
        g = v.result[key]
        g["span_source"] = "timed-observations"
        g["span_attribution"] = att.rules.get(v.kind, "?") if att else None
        if t["span"] is None or any(s is None for s in t["span"]):
            g["span_us"] = None
            why = att.error if att and att.error else "no kernel records"
            v.result.setdefault("error", f"GPU span: {why}")
            continue
        g["span_us"] = summarize(t["span"])
        v.result["kernels"] = v.kernels
        v.result["kernel_names"] = t.get("names", [])


# the bytes the cold-L2 flush writes: the C host's RF_BENCH_FLUSH_BYTES (src/harness/c_bench.h),
# five times the H200's 50 MB L2
L2_FLUSH_BYTES = 256 << 20


class L2Flush:
    """A CUDA graph that writes L2_FLUSH_BYTES of a device buffer (one fill kernel), for
    time_interleaved(flush=...): replayed and waited for before every observation, it
    evicts the L2, so each observation reads its weights from device memory."""

    kind = "graph"

    def __init__(self, nbytes: int = L2_FLUSH_BYTES):
        import torch

        self.nbytes = nbytes
        self.buf = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
        v = Variant("l2-flush", "L2 flush", self._write, None)
        capture(v)
        self.graph, self.kernels = v.graph, v.result["kernel_nodes"]

    def _write(self):
        self.buf.fill_(1.0)


def time_back_to_back(v, replays: int, samples: int) -> None:
    import torch

    if v.kind == "foreign":  # no events on its stream
        v.result["graph"]["b2b_us"] = None
        return
    stream = torch.cuda.current_stream()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    per = []
    for _ in range(samples):
        e0.record(stream)
        for _ in range(replays):
            v.graph.replay()
        e1.record(stream)
        e1.synchronize()
        per.append(e0.elapsed_time(e1) * 1000.0 / replays)
    v.result["graph"]["b2b_us"] = summarize(per)
    v.result["graph"]["b2b_replays"] = replays


def init_profiler_for_graphs() -> None:
    """CUPTI must be initialised before any graph is captured (rowfuse.bench.spans)."""
    from rowfuse.bench import spans

    spans.init_for_graphs()


def bench_shape(args, shape, seed: int) -> dict:
    import torch

    rows, channels, hidden = shape
    tag = f"{rows}x{channels}x{hidden}"
    cpu_inputs, case = make_inputs(rows, channels, hidden, seed)
    progress(f"{tag}: building variants (seed {seed})")
    variants = build_variants(args, shape, "cuda", cpu_inputs, case)
    ready = []
    for v in variants:
        if v.launch is None:
            v.result["error"] = v.note or "not available"
            progress(f"{tag}: {v.name}: skipped: {v.result['error']}")
            continue
        try:
            if v.kind == "graph":
                capture(v)
                v.kernels = v.result["kernel_nodes"]
            check(v, case)
        except Exception as e:
            v.result["error"] = f"capture/check failed: {e}"
        if "error" in v.result:
            progress(f"{tag}: {v.name}: FAILED check: {v.result['error']}")
            continue
        c = v.result["check"]
        progress(f"{tag}: {v.name}: check ok (rel. L2 {c.get('rel_l2', 0) or 0:.2e})")
        ready.append(v)
    if ready:
        n = len(ready)
        progress(f"{tag}: timing graphs with CUPTI, {args.rounds} rounds x {args.obs} obs x {n}")
        timed = time_interleaved(ready, args.rounds, args.obs, False, seed, cupti=True)
        record_timing(ready, timed, "graph")
        record_spans(ready, timed)
        att = timed["_span"]
        if att is not None:
            progress(
                f"{tag}: spans attributed ({att.rules}){': ' + att.error if att.error else ''}"
            )
        if args.control_obs > 0:
            progress(f"{tag}: control round without CUPTI, {args.control_obs} obs x {n}")
            ctl = time_interleaved(ready, 1, args.control_obs, False, seed ^ 0xC0417)
            for v in ready:
                v.result["graph"]["event_us_no_cupti"] = _summary_or_none(ctl[v.name]["event"])
                v.result["graph"]["host_us_no_cupti"] = summarize(ctl[v.name]["host"])
        progress(f"{tag}: timing eager launches")
        record_timing(
            ready, time_interleaved(ready, args.rounds, args.obs, True, seed + 1), "eager"
        )
        for v in ready:
            time_back_to_back(v, args.b2b_replays, args.b2b_samples)
            g = v.result["graph"]

            def med(s):
                return f"{s['median']:.2f}" if s else "-"

            progress(
                f"{tag}: {v.name}: span {med(g.get('span_us'))} us, event "
                f"{med(g['event_us'])} us, host {med(g['host_us'])} us, b2b "
                f"{med(g['b2b_us'])} us"
            )
    results = [v.result for v in variants]
    del variants, ready
    torch.cuda.synchronize()
    return {
        "shape": {"rows": rows, "channels": channels, "hidden": hidden},
        "seed": seed,
        "variants": results,
    }


def run(args) -> dict:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("rowfuse.bench: no CUDA device visible to torch")
    shapes = parse_shapes(args.shapes)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    props = torch.cuda.get_device_properties(0)
    doc = {
        "schema": SCHEMA,
        "tool": "python",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_revision": git_revision(),
        "seed": seed,
        "gpu": {
            "name": props.name,
            "sm_count": props.multi_processor_count,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "triton": _version("triton"),
            "jax": _jax_version(),
            "clocks_before": gpu_clocks(),
        },
        "method": {
            "rounds": args.rounds,
            "observations": args.obs,
            "b2b_replays": args.b2b_replays,
            "b2b_samples": args.b2b_samples,
            # the span is measured over the timed graph observations themselves, as the C
            # host does; the control round without CUPTI shows its cost to the host figures
            "span_source": "timed-observations",
            "cupti_during_timing": True,
            "span_attribution": "correlation",
            "foreign_attribution": "order",
            "control_observations": args.control_obs,
            "order": "every pass all variants once in a seeded shuffled order",
            "reference": "CPU interpreter, mixed precision (H rounded to fp16)",
            "compile_mode": args.compile_mode,
            "compile_budget_s": args.compile_budget_s,
            "event": "CUDA events around one launch, one synchronize per observation "
            "(none for XLA: it launches on its own stream)",
            "host": "perf_counter from before the launch call to after the synchronize "
            "(XLA: the call and block_until_ready)",
            "span": "CUPTI kernel records (torch.profiler, CUDA activity) of every timed graph "
            "observation, attributed to its replay by correlation id (src/base/span_attr.c): "
            "first kernel start to last kernel end. XLA's calls are not graph launches of "
            "ours: the records whose correlation id is none of the cudaGraphLaunch calls are "
            "attributed to its observations in time order, each call holding the kernel "
            "count measured under CUPTI before timing",
            "control": "one further interleaved graph round per variant with CUPTI off, after "
            "the CUPTI rounds: event_us_no_cupti / host_us_no_cupti",
            "check": "graph variants: replay into a NaN-poisoned Y; XLA: its returned Y "
            "(a fresh array per call, nothing to poison)",
        },
        "runs": [],
    }
    doc["gpu"]["driver"] = doc["gpu"]["clocks_before"].get("driver", "unknown")
    init_profiler_for_graphs()  # before any graph is captured
    for i, shape in enumerate(shapes):
        t0 = time.perf_counter()
        doc["runs"].append(bench_shape(args, shape, seed + i))
        progress(f"shape {i + 1}/{len(shapes)} done in {time.perf_counter() - t0:.1f} s")
        if args.output:
            _write(doc, args.output)  # keep what is done if a later shape dies
    doc["gpu"]["clocks_after"] = gpu_clocks()
    if args.output:
        _write(doc, args.output)
    return doc


def _version(mod: str) -> str:
    try:
        return __import__(mod).__version__
    except Exception:
        return "unavailable"


def _jax_version() -> str:
    from rowfuse.bench import xla

    return xla.version()


def _write(doc: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _compile_candidate_names() -> list[str]:
    from rowfuse.bench import inductor

    return inductor.CANDIDATE_NAMES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rowfuse.bench", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, help="rows N (with --channels and --hidden)")
    p.add_argument("--channels", type=int)
    p.add_argument("--hidden", type=int)
    p.add_argument("--shapes", help=f"ROWSxCHANNELSxHIDDEN list, e.g. {DEV_SHAPES}")
    p.add_argument("--seed", type=int, help="base seed (default: fresh random, recorded)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--obs", type=int, default=200, help="observations per round")
    p.add_argument("--b2b-replays", type=int, default=50)
    p.add_argument("--b2b-samples", type=int, default=20)
    p.add_argument(
        "--control-obs",
        type=int,
        default=200,
        help="observations per variant of the control round without CUPTI (0: none)",
    )
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    p.add_argument(
        "--compile-budget-s",
        type=float,
        default=40.0,
        help="seconds per shape for torch.compile's candidates (the first two always run)",
    )
    p.add_argument(
        "--compile-candidates",
        help="comma-separated torch.compile candidates to try (default: all, in order): "
        + ", ".join(_compile_candidate_names()),
    )
    p.add_argument(
        "--variants",
        help="comma-separated peers to time (the floor always): " + ", ".join(VARIANT_NAMES[1:]),
    )
    p.add_argument("-o", "--output", help="JSON output path")
    p.add_argument("--markdown", help="also write the markdown table here")
    p.add_argument(
        "--plant-fault",
        choices=WRONG_STREAMS,
        help="tests of the capture check only: the torch-eager peer's work goes to another "
        "stream, so its graph captures nothing and the peer must be refused",
    )
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.shapes is None:
        if None in (args.rows, args.channels, args.hidden):
            raise SystemExit("rowfuse.bench: give --rows, --channels and --hidden, or --shapes")
        args.shapes = f"{args.rows}x{args.channels}x{args.hidden}"
    try:
        parse_shapes(args.shapes)
    except ValueError as e:
        raise SystemExit(f"rowfuse.bench: {e}") from e
    if args.rounds < 1 or args.obs < 1 or args.b2b_replays < 1 or args.b2b_samples < 1:
        raise SystemExit("rowfuse.bench: rounds, obs, b2b replays and samples must be >= 1")
    if args.control_obs < 0 or args.compile_budget_s < 0:
        raise SystemExit("rowfuse.bench: --control-obs and --compile-budget-s must be >= 0")
    bad = set((args.compile_candidates or "").split(",")) - set(_compile_candidate_names()) - {""}
    if bad:
        raise SystemExit(
            f"rowfuse.bench: --compile-candidates: unknown {', '.join(sorted(bad))} "
            f"(known: {', '.join(_compile_candidate_names())})"
        )
    unknown = set((args.variants or "").split(",")) - set(VARIANT_NAMES[1:]) - {""}
    if unknown:
        raise SystemExit(
            f"rowfuse.bench: --variants: unknown {', '.join(sorted(unknown))} "
            f"(known: {', '.join(VARIANT_NAMES[1:])})"
        )
    doc = run(args)
    from rowfuse.bench import report

    md = report.render_markdown([doc])
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    print(md)
    failed = [
        f"{r['shape']['rows']}x{r['shape']['channels']}x{r['shape']['hidden']} {v['name']}"
        for r in doc["runs"]
        for v in r["variants"]
        if "error" in v
    ]
    if failed:
        print(f"rowfuse.bench: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
