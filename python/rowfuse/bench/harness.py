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
Then, interleaving the variants, 5 rounds x 200 observations of (a) the CUDA-event
interval around a replay and (b) host completion (host clock from just before the launch
call to the return of the synchronize); (c) the GPU span of one replay from CUPTI activity
records (torch.profiler), over --span-replays (20) separate synchronized replays after the
timed rounds, with the profiler off while timing (method.span_source "separate-replays";
the C host takes its span over the timed observations themselves); (d) back-to-back: N
replays between two events, over N. Each variant is also timed launched eagerly (no
graph). Writes JSON (schema rowfuse-bench/1), and prints the markdown table of
rowfuse.bench.report at the end.

Variants (the Python host's own table, with its own floor): empty (floor), PyTorch eager,
torch.compile (max-autotune-no-cudagraphs, the faster of two fresh compiles) and a
hand-written Triton fused kernel autotuned per shape (rowfuse.bench.triton_fused.tune); each
peer's tuning is recorded in its result's "tuning".
rowfuse's variants and cuBLASLt run from C (`rowfuse bench --c`), whose host costs differ;
the report keeps the two tables apart. A variant that cannot run is recorded with the
reason, never dropped silently.

The statistics helpers (quantile, summarize) need no GPU and no torch; the quantile is
the C one (src/base/stats.c).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time

SCHEMA = "rowfuse-bench/1"
DEV_SHAPES = "49x48x96,64x64x128,1000x96x200,4096x128x512,131072x32x64,8192x512x2048"

# (name, label, how it is launched)
VARIANTS = [
    ("empty", "empty kernel (floor)", "triton"),
    ("torch-eager", "PyTorch eager + graph", "torch"),
    ("torch-compile", "torch.compile + graph", "torch"),
    ("triton-fused", "Triton fused + graph", "triton"),
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
    and writes `y` (None for the empty floor)."""

    def __init__(self, name, label, launch, y, note=""):
        self.name, self.label, self.launch, self.y, self.note = name, label, launch, y, note
        self.kernels_min = 1  # kernel nodes its captured graph must hold
        self.graph = None
        self.result = {"name": name, "label": label, "note": note}


def _mm32(a, b):
    """fp16 operands, fp32 output: cuBLAS with an fp32 result on the GPU (out_dtype); on the
    CPU, where that overload does not exist, the same products in fp32 (tests)."""
    import torch

    if a.is_cuda:
        return torch.mm(a, b, out_dtype=torch.float32)
    return torch.mm(a.float(), b.float())


def torch_eager_block(x, w1, b1, w2, b2, y):
    """The block as a PyTorch user writes it for these precisions (cuBLAS GEMMs with fp16
    operands and fp32 outputs, so b1 is added before H is rounded, as the block defines;
    `torch.mm(..., out_dtype=torch.float32)`: an fp16-output mm would round X W1 to fp16
    first and compute another function, which the gate rejects)."""
    import torch

    h = torch.relu(_mm32(x, w1) + b1).half()
    t = _mm32(h, w2) + b2 + x.float()
    torch.clamp(t, min=0.0, out=y)  # ReLU into the caller's buffer (relu has no out=)


def _compiled_block(x, w1, b1, w2, b2, y):
    import torch

    h = torch.relu(_mm32(x, w1) + b1).half()
    y.copy_(torch.relu(_mm32(h, w2) + b2 + x.float()))


def _fresh_block(tag: int):
    """`_compiled_block` under a code object of its own. Dynamo keeps compiled code per code
    object, so torch.compile of a fresh copy compiles anew while the earlier copy stays
    compiled and callable (torch._dynamo.reset() would throw the first compile away)."""
    import types

    name = f"_compiled_block_{tag}"
    code = _compiled_block.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, _compiled_block.__globals__, name)


def _compile_fresh(mode: str, fn, call_args):
    """torch.compile(fn) and its first call (where Inductor compiles and, in the
    max-autotune modes, benchmarks its choices) with Inductor's caches off and a fresh
    cache directory, so the autotuning really runs again."""
    import contextlib

    import torch

    try:
        from torch._inductor.utils import fresh_cache
    except ImportError:  # older torch: the config switch alone
        fresh_cache = contextlib.nullcontext
    with fresh_cache(), torch._inductor.config.patch(force_disable_caches=True):
        compiled = torch.compile(fn, mode=mode, dynamic=False)
        compiled(*call_args)
        torch.cuda.synchronize()
    return compiled


def compile_twice(mode: str, call_args, time_us, compile_fn=_compile_fresh, fresh_fn=_fresh_block):
    """Two fresh compiles of the block (max-autotune picks can differ from one compile to
    the next): each one's compile time and its per-call time in a CUDA graph
    (`time_us(fn)`); the faster is kept. Returns (callable or None, record)."""
    runs, fns = [], []
    for i in range(2):
        t0 = time.perf_counter()
        try:
            compiled = compile_fn(mode, fresh_fn(i), call_args)
            compile_s = time.perf_counter() - t0
            us = time_us(lambda c=compiled: c(*call_args))
            runs.append({"compile_s": round(compile_s, 2), "graph_us": round(us, 3)})
            fns.append(compiled)
        except Exception as e:  # recorded; the other compile may still serve
            first = (str(e).strip().splitlines() or [""])[0][:200]
            runs.append(
                {
                    "compile_s": round(time.perf_counter() - t0, 2),
                    "error": f"{type(e).__name__}: {first}",
                }
            )
            fns.append(None)
    rec = {
        "mode": mode,
        "method": "two fresh compiles (own code object, Inductor caches off), each timed as "
        "the median per call of a CUDA graph of back-to-back calls; the faster kept",
        "compiles": runs,
    }
    ok = [i for i, f in enumerate(fns) if f is not None]
    if not ok:
        return None, rec
    best = min(ok, key=lambda i: runs[i]["graph_us"])
    rec["chosen"] = best
    if len(ok) == 2:
        a, b = runs[0]["graph_us"], runs[1]["graph_us"]
        rec["spread"] = round(max(a, b) / min(a, b), 3) if min(a, b) > 0 else None
    return fns[best], rec


def build_variants(args, shape, dev, cpu_inputs, ref=None):
    """The Python host's variants on device copies of the inputs: the floor, PyTorch eager
    as users run it, torch.compile (best of two fresh compiles) and the Triton fused kernel
    (autotuned for the shape; with `ref` every configuration must pass the check before it
    may be chosen). The peers' tuning goes into each variant's result["tuning"]."""
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
    chosen = set(args.variants.split(",")) if getattr(args, "variants", None) else None

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
        out.append(_compile_variant(args, x, w1, b1, w2, b2, ybuf(), shape))
    if wanted("triton-fused"):
        out.append(_triton_variant(x, w1, b1, w2, b2, ybuf(), ref, shape))
    return out


def _compile_variant(args, x, w1, b1, w2, b2, y, shape):
    """torch.compile of the block, the faster of two fresh compiles."""
    from rowfuse.bench import triton_fused

    rows, channels, hidden = shape
    t0 = time.perf_counter()
    compiled, rec = compile_twice(
        args.compile_mode, (x, w1, b1, w2, b2, y), triton_fused.time_graph_us
    )
    if compiled is None:
        errors = "; ".join(r.get("error", "") for r in rec["compiles"])
        v = Variant("torch-compile", VARIANTS[2][1], None, None, note=f"compile failed: {errors}")
    else:
        v = Variant(
            "torch-compile",
            VARIANTS[2][1],
            lambda y=y, c=compiled: c(x, w1, b1, w2, b2, y),
            y,
            note=f"mode {args.compile_mode}, the faster of two fresh compiles "
            f"(#{rec['chosen'] + 1}; spread {rec.get('spread')})",
        )
    v.result["compile_s"] = round(time.perf_counter() - t0, 2)
    v.result["tuning"] = rec
    progress(f"{rows}x{channels}x{hidden}: torch-compile: {v.note} ({rec['compiles']})")
    return v


def _triton_variant(x, w1, b1, w2, b2, y, ref, shape):
    """The hand-written Triton fused kernel, autotuned for the shape."""
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
            note=f"autotuned: {rec['chosen_label']}, fastest of {rec['timed']} timed "
            f"({rec['space']} in the space, {rec['compiled']} compiled)",
        )
        v.result["tuning"] = rec
    except Exception as e:
        v = Variant("triton-fused", VARIANTS[3][1], None, None, note=f"tuning failed: {e}")
    progress(f"{rows}x{channels}x{hidden}: triton-fused: {v.note}")
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
    """Poison y with NaN, replay the graph, apply the one comparison rule (rowfuse/mlp.h)."""
    import torch

    from rowfuse.capi import clib

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


def time_interleaved(variants, rounds: int, obs: int, eager: bool) -> None:
    """rounds x obs observations per variant, variants interleaved; the order rotates each
    round so that no variant always follows the same one."""
    import torch

    stream = torch.cuda.current_stream()
    key = "eager" if eager else "graph"
    ev = {v.name: [] for v in variants}
    host = {v.name: [] for v in variants}
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    for r in range(rounds):
        order = variants[r % len(variants) :] + variants[: r % len(variants)]
        for _ in range(obs):
            for v in order:
                fn = v.launch if eager else v.graph.replay
                t0 = time.perf_counter_ns()
                e0.record(stream)
                fn()
                e1.record(stream)
                e1.synchronize()
                t1 = time.perf_counter_ns()
                ev[v.name].append(e0.elapsed_time(e1) * 1000.0)
                host[v.name].append((t1 - t0) / 1000.0)
    for v in variants:
        v.result.setdefault(key, {})
        v.result[key]["event_us"] = summarize(ev[v.name])
        v.result[key]["host_us"] = summarize(host[v.name])


def time_back_to_back(v, replays: int, samples: int) -> None:
    import torch

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


def gpu_spans(v, replays: int) -> None:
    """GPU span of one replay: first kernel start to last kernel end, from the CUPTI
    activity records that torch.profiler collects; one synchronized replay at a time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            v.graph.replay()
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    kernels = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)), e.get("name", ""))
        for e in trace.get("traceEvents", [])
        if e.get("cat") == "kernel" and e.get("ph") == "X"
    )
    if not kernels or len(kernels) % replays:
        v.result["graph"]["span_us"] = None
        v.result.setdefault(
            "error",
            f"CUPTI saw {len(kernels)} kernel records for {replays} replays (not a multiple)",
        )
        return
    n = len(kernels) // replays
    spans = []
    for i in range(replays):
        chunk = kernels[i * n : (i + 1) * n]
        spans.append(max(k[1] for k in chunk) - min(k[0] for k in chunk))
    v.result["kernels"] = n
    v.result["kernel_names"] = sorted({k[2][:80] for k in kernels[:n]})
    v.result["graph"]["span_us"] = summarize(spans)


def init_profiler_for_graphs() -> None:
    """CUPTI must be initialised before any graph is captured, or graph kernels go
    unrecorded; torch ships a helper for exactly this."""
    try:
        from torch.profiler import _utils

        _utils._init_for_cuda_graphs()
    except (ImportError, AttributeError):
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]):
            torch.cuda.synchronize()


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
            capture(v)
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
        progress(f"{tag}: timing graphs, {args.rounds} rounds x {args.obs} obs x {len(ready)}")
        time_interleaved(ready, args.rounds, args.obs, eager=False)
        progress(f"{tag}: timing eager launches")
        time_interleaved(ready, args.rounds, args.obs, eager=True)
        for v in ready:
            time_back_to_back(v, args.b2b_replays, args.b2b_samples)
            gpu_spans(v, args.span_replays)
            g = v.result["graph"]
            span = g["span_us"]["median"] if g.get("span_us") else float("nan")
            progress(
                f"{tag}: {v.name}: span {span:.2f} us, event {g['event_us']['median']:.2f} us,"
                f" host {g['host_us']['median']:.2f} us, b2b {g['b2b_us']['median']:.2f} us"
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
            "clocks_before": gpu_clocks(),
        },
        "method": {
            "rounds": args.rounds,
            "observations": args.obs,
            "b2b_replays": args.b2b_replays,
            "b2b_samples": args.b2b_samples,
            "span_replays": args.span_replays,
            # how the span is taken here (the C host takes it over its timed observations)
            "span_source": "separate-replays",
            "cupti_during_timing": False,
            "reference": "CPU interpreter, mixed precision (H rounded to fp16)",
            "compile_mode": args.compile_mode,
            "event": "CUDA events around one launch, one synchronize per observation",
            "host": "perf_counter from before the first launch call to after the synchronize",
            "span": "CUPTI kernel records via torch.profiler over span_replays separate "
            "synchronized replays per variant after the timed rounds (not over the timed "
            "observations, unlike the C host): first kernel start to last kernel end",
        },
        "runs": [],
    }
    doc["gpu"]["driver"] = doc["gpu"]["clocks_before"].get("driver", "unknown")
    init_profiler_for_graphs()
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


def _write(doc: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


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
    p.add_argument("--span-replays", type=int, default=20)
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
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
    if args.rounds < 1 or args.obs < 1 or args.span_replays < 1 or args.b2b_replays < 1:
        raise SystemExit("rowfuse.bench: rounds, obs, span and b2b replays must be >= 1")
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
