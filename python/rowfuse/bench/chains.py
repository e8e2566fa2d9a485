"""The suite of block kinds (rowfuse.blocks) against their peers, each shape in one process.

    python -m rowfuse.bench.chains --packages DIR [--kinds K,...] [--rows 1,7,...] -o out.json

For every kind and row count: rowfuse's chain package DIR/KIND-ROWS (compiled ahead of
time from `python -m rowfuse.export rowfuse.blocks:KIND --rows ROWS`; loaded through
rowfuse.torch.compile_block(package=...), which checks its weights against the module),
the same block's conventional schedule DIR/KIND-ROWS-conv when it is there (`--schedule
conventional`: one kernel per linear, the values between kernels in global memory; variant
rowfuse-conv, counted among the peers; left out where the plan's own choice is already the
conventional schedule), cuBLASLt's GEMMs with their bias and bias+activation epilogues and
PyTorch ops between them on the package's weights (rowfuse.bench.lt_chain, variant
cublaslt), PyTorch eager on the fp16 module as users run it, torch.compile of
the same fp16 module (mode max-autotune-no-cudagraphs, fullgraph, static shapes: its
autotuner picks the GEMM configurations for the shape; the CUDA graph is ours) and the
empty-kernel floor. Every variant is captured in a CUDA graph and timed with the method of
docs/benchmarking.md: interleaved observations in a seeded shuffled order, each one GPU
span from CUPTI's kernel records (first kernel start to last kernel end), medians
reported. Cells of at most --cold-l2-rows rows (default 64, the decode regime, where a
block reads its weights once per call) are timed a second time with a cold L2: 256 MiB
written (rowfuse.bench.harness.L2Flush, the C host's --cold-l2) and waited for before
every observation, outside its span, so each observation reads its weights from device
memory rather than from the L2 the previous replay filled. The table then shows both, and
each cell records its weight bytes and the rate at which rowfuse's span reads them.

Weights: a package's weights.bin can be written from the module on the machine that runs
the benchmark (`weight_map` records, where the package was compiled, which module
parameter each slice of weights.bin holds, and `write_weights` rebuilds the file from it;
prepare checks that the rebuilt file is byte-identical to the compiled one), so large
weights need not travel with the packages.

Correctness (a sanity check of every variant, not the gate: `rowfuse check` is): the
output against the module in fp64 on the GPU, relative L2 error. A variant fails when its
error exceeds 4x that of PyTorch eager in fp16 (which rounds every intermediate to fp16)
or 4 fp16 unit roundoffs (2^-9), whichever is larger; a dropped bias, a wrong activation
or a stale buffer shows at 1e-2 and above.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import sys
import time

import numpy as np

ROWS = (1, 7, 64, 1000, 16384)
# the decode-sized row counts the weight-streaming schedule is judged at, for the kinds
# whose weights make it the plan at few rows
DECODE_ROWS = (4, 16)
DECODE_KINDS = ("gpt2_ffn", "llama_ffn")
# kinds benchmarked at decode rows only (their weights make larger row counts a GEMM's job):
# the DECODE_ROWS and the suite's rows up to 64
DECODE_ONLY = ("xl_gelu_ffn",)
# kinds also benchmarked at a throughput row count, where the span is judged against the
# roofline of the device's measured ceilings (`roofline`): the tiny MLP at 2^20 rows, the
# regime tiny-cuda-nn is built for
THROUGHPUT_ROWS = {"tcnn_mlp": (1 << 20,)}
CHAIN_KINDS = (
    "tcnn_mlp",
    "gpt2_ffn",
    "bert_ffn",
    "vit_ffn_ls",
    "llama_ffn",
    "res_mlp_gelu",
    "res_mlp_silu",
    "classifier",
    "classifier_probs",
    "mlp_head",
    "stacked",
    "xl_gelu_ffn",
)
TOL_FLOOR = 2.0**-9  # four fp16 unit roundoffs (2^-11 each)
TOL_FACTOR = 4.0
W_KEYS = ("w", "wg", "wu")  # fp16 [k, n] = nn.Linear.weight^T, in wh
B_KEYS = ("b", "bg", "bu")  # fp32 [n] = nn.Linear.bias, in wf
NORM_KEYS = ("gamma", "beta")  # fp32 [width of the norm's input], in wf


# (package suffix, variant, schedule) of the same block compiled in another schedule with
# --schedule: KIND-ROWS-conv and KIND-ROWS-wgmma (its linears as Hopper GEMMs) are the
# suite's; the -mma (whole-chain kernel) and -stream (split-reduction kernel) siblings are
# compiled for the decode shapes (tests/gpu decode), -tma (the split-reduction kernel with
# its TMA weight ring, --stream-tma on) for those and the suite's decode rows. Each counts
# among the peers; one whose schedule is the plan's own choice (own_schedule) is left out.
SIBLINGS = (
    ("-conv", "rowfuse-conv", "conventional"),
    ("-wgmma", "rowfuse-conv-wgmma", "conventional-wgmma"),
    ("-mma", "rowfuse-mma", "chain"),
    ("-stream", "rowfuse-stream", "chain_stream"),
    ("-tma", "rowfuse-stream-tma", "chain_stream_tma"),
    ("-wide", "rowfuse-stream-wide", "chain_stream_wide"),
    ("-warp", "rowfuse-warp", "chain_warp"),
    ("-warp16", "rowfuse-warp16", "chain_warp16"),
)


def own_schedule(plan: dict) -> str:
    """A package's schedule as SIBLINGS name it: the plan's, with "_tma" where its
    streaming kernel has the TMA weight ring, "_wide" where it streams X beside W1, "_warp"
    where the whole chain's kernel has the warp-rows layout, with the plan's warp tiles
    (the -warp16 sibling forces 16 rows, so it is never the plan's own)."""
    ks = plan.get("kernels", [])
    tma = any(k.get("weight_copy") == "tma" for k in ks)
    wide = any(k.get("x_stream") for k in ks)
    warp = any(k.get("warp_rows") for k in ks)
    sfx = ("_tma" if tma else "") + ("_wide" if wide else "") + ("_warp" if warp else "")
    return plan.get("schedule", "") + sfx


def package_name(kind: str, rows: int, conventional: bool = False) -> str:
    """KIND-ROWS: the package of the plan's own choice; KIND-ROWS-conv: the same block
    compiled with --schedule conventional (one kernel per linear), the variant
    rowfuse-conv."""
    return f"{kind}-{rows}" + ("-conv" if conventional else "")


def kind_of(name: str) -> str:
    """The kind of a package_name (KIND-ROWS[-...]; kinds and their specs, KIND@WIDTHS,
    have no '-')."""
    return name.split("-", 1)[0]


def cells(kinds, rows) -> list[tuple[str, int]]:
    """(kind, rows) of the suite: every kind at `rows`, the DECODE_KINDS also at
    DECODE_ROWS, the DECODE_ONLY kinds at DECODE_ROWS and the rows up to 64, in increasing
    rows."""
    out = []
    for k in kinds:
        if k in DECODE_ONLY:
            rs = {r for r in rows if r <= 64} | set(DECODE_ROWS)
        else:
            rs = set(rows) | (set(DECODE_ROWS) if k in DECODE_KINDS else set())
        rs |= set(THROUGHPUT_ROWS.get(k, ()))
        out += [(k, r) for r in sorted(rs)]
    return out


def chain_work(chain: dict, rows: int) -> dict:
    """What one call of the chain (plan.json's "chain") must do at `rows`: tensor-core
    FLOPs (2 K N per row for every linear, twice for a gated stage) and the bytes no
    schedule can avoid (X read in fp16, Y written in fp32, the weights read once)."""
    flops = sum(
        2.0 * rows * s["k"] * s["n"] * (2 if s["op"] == "gated" else 1)
        for s in chain["stages"]
        if s["op"] in ("linear", "gated")
    )
    weights = 2 * chain["wh_elems"] + 4 * chain["wf_elems"]
    io = 2 * rows * chain["in_width"] + 4 * rows * chain["out_width"]
    return {"flops": flops, "bytes": io + weights, "io_bytes": io, "weight_bytes": weights}


def roofline(work: dict, ceilings: dict) -> dict:
    """The shortest time the device's measured ceilings allow for `work` (us): the larger
    of FLOPs at the GEMM rate and bytes at the copy rate, and which one binds."""
    t_flop = work["flops"] / (ceilings["gemm_tflops"] * 1e12) * 1e6
    t_mem = work["bytes"] / (ceilings["copy_gbs"] * 1e9) * 1e6
    return {
        "flop_us": t_flop,
        "memory_us": t_mem,
        "roofline_us": max(t_flop, t_mem),
        "limit": "tensor" if t_flop >= t_mem else "memory",
    }


def measure_ceilings(reps: int = 20, warmup: int = 3) -> dict:
    """The device's two ceilings, measured as the C host measures them (src/harness/
    ceilings.c): a device-to-device copy of 1 GiB (2 x bytes / time: every byte read and
    written once) and an 8192^3 fp16 GEMM with fp32 accumulation (2 N^3 / time; here
    PyTorch's cuBLAS heuristic, where the C host times cuBLASLt's top algorithms), each the
    median of `reps` event-timed launches after `warmup`."""
    import torch

    def median_ms(fn) -> float:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        return float(np.median(times))

    nbytes = 1 << 30
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_copy = median_ms(lambda: dst.copy_(src))
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    t_gemm = median_ms(lambda: torch.mm(a, b))
    return {
        "copy_gbs": 2 * nbytes / (t_copy * 1e-3) / 1e9,
        "gemm_tflops": 2 * n**3 / (t_gemm * 1e-3) / 1e12,
        "method": f"median of {reps} event-timed launches: 1 GiB device copy, {n}^3 fp16 "
        "GEMM (torch.mm, fp32 accumulation)",
    }


def parse_cells(text: str) -> list[tuple[str, int]]:
    """(kind, rows) of --cells KIND:ROWS,...; ValueError naming a malformed entry."""
    out = []
    for item in text.split(","):
        kind, _, n = item.strip().rpartition(":")
        if not kind or not n.isdigit() or int(n) < 1:
            raise ValueError(f"--cells: {item!r} is not KIND:ROWS (rows a positive integer)")
        out.append((kind, int(n)))
    return out


def write_all_weights(packages: str, weights_map: str) -> list[str]:
    """weights.bin of every package of the map, from its kind's module; the names written."""
    from rowfuse import blocks

    wmaps = json.load(open(weights_map))
    modules = {}  # one module per kind (its packages differ in rows only)
    for name, wm in wmaps.items():
        kind = kind_of(name)
        if kind not in modules:
            modules[kind] = blocks.make_spec(kind)[0]
        pkg = os.path.join(packages, name)
        plan = json.load(open(os.path.join(pkg, "plan.json")))
        write_weights(modules[kind], pkg, wm["map"], plan["chain"], wm["size"])
    return list(wmaps)


# ---------------------------------------------------------------- weights, rebuilt


def _slices(plan: dict):
    """(buffer, element offset, shape, transposed) of every weight slice the stages name."""
    ch = plan["chain"]
    widths = {int(v["id"]): int(v["width"]) for v in ch["values"]}
    for s in ch["stages"]:
        for key in W_KEYS:
            if int(s.get(key, -1)) >= 0:
                yield "wh", int(s[key]), (int(s["k"]), int(s["n"])), True
        for key in B_KEYS:
            if int(s.get(key, -1)) >= 0:
                yield "wf", int(s[key]), (int(s["n"]),), False
        for key in NORM_KEYS:
            if int(s.get(key, -1)) >= 0:
                yield "wf", int(s[key]), (widths[int(s["src"])],), False


def _param_value(p, transposed: bool, buf: str, scale=None) -> np.ndarray:
    """The parameter as the package holds it: W^T in fp16, vectors in fp32; with `scale` (a
    1-D parameter the compiler folded in, LayerScale) each product rounded to fp32 first."""
    a = p.detach().cpu().double().numpy()
    a = a.T if transposed else a
    if scale is not None:
        from rowfuse.torch import folded

        a = folded(a, scale.detach().cpu().double().numpy())
    return a.astype(np.float16 if buf == "wh" else np.float32)


def weight_map(module, package: str) -> list[dict]:
    """Which parameter of `module` each weight slice of the package holds (exact values),
    with the 1-D parameter folded into it where the compiler folded one (LayerScale):
    [{buf, offset, shape, param, tr, scale}]. ValueError naming a slice no parameter
    matches."""
    plan = json.load(open(os.path.join(package, "plan.json")))
    from rowfuse.torch import chain_weights

    bufs = dict(zip(("wh", "wf"), chain_weights(package, plan["chain"]), strict=True))
    params = dict(module.named_parameters())
    out = []
    for buf, off, shape, tr in _slices(plan):
        n = int(np.prod(shape))
        have = bufs[buf][off : off + n].reshape(shape)
        hit = None
        fits = [n for n, p in params.items() if tuple(p.shape[::-1] if tr else p.shape) == shape]
        scales = [None] + [n for n, p in params.items() if tuple(p.shape) == (shape[-1],)]
        for sc in scales:
            for name in fits:
                v = _param_value(params[name], tr, buf, params[sc] if sc else None)
                if np.array_equal(v, have):
                    hit = (name, sc)
                    break
            if hit:
                break
        if hit is None:
            raise ValueError(f"{package}: the {buf} slice at {off} {shape} is no parameter")
        out.append(
            {
                "buf": buf,
                "offset": off,
                "shape": list(shape),
                "param": hit[0],
                "tr": tr,
                "scale": hit[1],
            }
        )
    return out


def write_weights(module, package: str, wmap: list[dict], ch: dict, size: int) -> None:
    """weights.bin of `size` bytes from `module`'s parameters at the map's slices (zeros
    elsewhere, as the compiler writes the padding)."""
    raw = np.zeros(size, dtype=np.uint8)
    bufs = {
        "wh": raw[ch["wh_offset"] : ch["wh_offset"] + 2 * ch["wh_elems"]].view(np.float16),
        "wf": raw[ch["wf_offset"] : ch["wf_offset"] + 4 * ch["wf_elems"]].view(np.float32),
    }
    params = dict(module.named_parameters())
    for e in wmap:
        sc = params[e["scale"]] if e.get("scale") else None
        v = _param_value(params[e["param"]], e["tr"], e["buf"], sc).reshape(-1)
        bufs[e["buf"]][e["offset"] : e["offset"] + v.size] = v
    raw.tofile(os.path.join(package, "weights.bin"))


def prepare_weights(kind: str, package: str, small: bool = False) -> dict:
    """Here, where the package was compiled: its weight map, checked by rebuilding
    weights.bin from the module into a copy and comparing bytes. {map, size}."""
    import shutil
    import tempfile

    from rowfuse import blocks

    module, _ = blocks.make_spec(kind, small=small)
    plan = json.load(open(os.path.join(package, "plan.json")))
    wmap = weight_map(module, package)
    size = os.path.getsize(os.path.join(package, "weights.bin"))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(package, "plan.json"), tmp)
        write_weights(module, tmp, wmap, plan["chain"], size)
        a = open(os.path.join(package, "weights.bin"), "rb").read()
        b = open(os.path.join(tmp, "weights.bin"), "rb").read()
    if a != b:
        raise ValueError(f"{package}: weights.bin rebuilt from the module differs")
    return {"map": wmap, "size": size}


# ---------------------------------------------------------------- the benchmark


def _rel_l2(y, ref) -> float:
    d = (y.double() - ref).norm().item()
    n = ref.norm().item()
    return d / n if n > 0 else d


class _Out:
    """A launch that keeps the output tensor its last call returned (inside a captured
    graph: the graph's own output buffer)."""

    def __init__(self, fn, x):
        self.fn, self.x, self.y = fn, x, None

    def __call__(self):
        self.y = self.fn(self.x)


def _compile(module16, x16, mode: str):
    import torch

    torch._dynamo.reset()
    t0 = time.perf_counter()
    f = torch.compile(module16, mode=mode, fullgraph=True, dynamic=False)
    with torch.no_grad():
        f(x16)
    torch.cuda.synchronize()
    return f, time.perf_counter() - t0


def _load_package(args, module, package: str, name: str) -> dict:
    """plan.json of a package, its weights.bin first written from the module when the run
    has a weight map (--weights-map)."""
    plan = json.load(open(os.path.join(package, "plan.json")))
    if args.weights_map:
        wm = json.load(open(args.weights_map))[name]
        write_weights(module, package, wm["map"], plan["chain"], wm["size"])
    return plan


_FLUSH = []


def _l2_flush(harness):
    """The run's one L2 flush (its 256 MiB buffer and captured graph), made at its first
    cold-L2 cell and replayed by every other."""
    if not _FLUSH:
        _FLUSH.append(harness.L2Flush())
    return _FLUSH[0]


def bench_cell(kind: str, rows: int, package: str, args, seed: int) -> dict:
    """One kind at one row count: every variant captured, checked and timed."""
    import torch

    from rowfuse import blocks
    from rowfuse import torch as rtorch
    from rowfuse.bench import harness, lt_chain, report, triton_fused

    tag = f"{kind} x {rows}"
    module, _ = blocks.make_spec(kind)
    cell = {"kind": kind, "rows": rows, "variants": []}
    plan = _load_package(args, module, package, package_name(kind, rows))
    cell["kernel"] = plan["kernels"][0]["name"] if plan.get("kernels") else None
    cell["schedule"] = plan.get("schedule")
    cell["weight_bytes"] = 2 * plan["chain"]["wh_elems"] + 4 * plan["chain"]["wf_elems"]
    cell["work"] = chain_work(plan["chain"], rows)
    c_in = plan["chain"]["in_width"]
    gen = torch.Generator().manual_seed(seed)
    x32 = torch.randn(rows, c_in, generator=gen)
    x16 = x32.half().cuda()
    with torch.no_grad():
        ref = copy.deepcopy(module).double().cuda()(x16.double())
    module16 = copy.deepcopy(module).half().cuda().eval()

    variants = [harness.Variant("empty", "floor (an empty kernel)", triton_fused.empty, None)]
    block = rtorch.compile_block(module, rows=rows, package=package)
    variants.append(harness.Variant("rowfuse", f"rowfuse {cell['kernel']}", _Out(block, x16), 1))
    # the same block in the other schedules beside the plan's choice, where compiled
    alt_blocks = []
    for suffix, name, schedule in SIBLINGS:
        alt = package.rstrip("/") + suffix
        if own_schedule(plan) == schedule or not os.path.isfile(os.path.join(alt, "plan.json")):
            continue
        alt_plan = _load_package(args, module, alt, package_name(kind, rows) + suffix)
        alt_blocks.append(rtorch.compile_block(module, rows=rows, package=alt))
        label = f"rowfuse {schedule} ({len(alt_plan['kernels'])} kernels)"
        variants.append(harness.Variant(name, label, _Out(alt_blocks[-1], x16), 1))
    variants.append(harness.Variant("torch-eager", "PyTorch eager, fp16", _Out(module16, x16), 1))
    # cuBLASLt's GEMMs with the epilogues it has, from the package's own weights
    lt = lt_chain.LtChain(package, device="cuda")
    variants.append(harness.Variant("cublaslt", lt_chain.describe(lt), _Out(lt, x16), 1))
    for i in range(args.compiles if args.compile else 0):
        # each compile fresh (its own autotuning); the fastest is kept (keep_best_compile)
        name = "torch-compile" + (f"#{i + 1}" if i else "")
        try:
            f, secs = _compile(module16, x16, args.compile_mode)
            v = harness.Variant(name, f"torch.compile {args.compile_mode}", _Out(f, x16), 1)
            v.result["compile_s"] = round(secs, 1)
            variants.append(v)
        except Exception as e:  # reported, not raised: the other variants still run
            v = harness.Variant(name, "torch.compile", None, None)
            v.result["error"] = f"compile failed: {str(e).splitlines()[0][:300]}"
            variants.append(v)
    ready = []
    with torch.no_grad():
        for v in variants:
            if v.launch is None:
                continue
            try:
                harness.capture(v)
                v.kernels = v.result["kernel_nodes"]
                if v.y is not None:
                    out = v.launch.y
                    out.fill_(float("nan"))
                    v.graph.replay()
                    torch.cuda.synchronize()
                    v.result["rel_l2"] = _rel_l2(out.reshape(ref.shape), ref)
                ready.append(v)
            except Exception as e:
                v.result["error"] = f"capture/check failed: {str(e).splitlines()[0][:300]}"
        base = next((v for v in ready if v.name == "torch-eager"), None)
        tol = max(TOL_FLOOR, TOL_FACTOR * (base.result["rel_l2"] if base else 0.0))
        cell["tolerance_rel_l2"] = tol
        for v in list(ready):
            e = v.result.get("rel_l2")
            if e is not None and not (e <= tol):
                v.result["error"] = f"rel. L2 {e:.3g} > {tol:.3g} against fp64"
                ready.remove(v)
        if ready:
            timed = harness.time_interleaved(ready, args.rounds, args.obs, False, seed, cupti=True)
            harness.record_timing(ready, timed, "graph")
            harness.record_spans(ready, timed)
        if ready and rows <= args.cold_l2_rows:
            cell["l2_flush_bytes"] = harness.L2_FLUSH_BYTES
            flush = _l2_flush(harness)
            timed = harness.time_interleaved(
                ready, args.rounds, args.obs, False, seed + 1, cupti=True, flush=flush
            )
            harness.record_timing(ready, timed, "graph_cold")
            harness.record_spans(ready, timed, "graph_cold")
    for v in variants:
        r = dict(v.result)
        r["span_median_us"] = report.span_median(r)
        if "graph_cold" in r:
            r["span_cold_median_us"] = report.span_median(r, "graph_cold")
        cell["variants"].append(r)
    cell["variants"] = keep_best_compile(cell["variants"])
    for r in cell["variants"]:
        cold = r.get("span_cold_median_us")
        harness.progress(
            f"{tag}: {r['name']}: "
            + (
                f"{r['span_median_us']:.2f} us"
                + (f" ({cold:.2f} us cold L2)" if cold is not None else "")
                + f", rel. L2 {r.get('rel_l2', 0):.2e}"
                if r["span_median_us"] is not None
                else f"FAILED: {r.get('error', '?')}"
            )
        )
    del block, alt_blocks, lt, variants, ready
    torch.cuda.synchronize()
    return cell


def keep_best_compile(variants: list[dict]) -> list[dict]:
    """The torch.compile records (torch-compile, torch-compile#2, ...) folded into one,
    torch-compile: the fastest by GPU span of those that ran (else the first), with every
    compile's span and time under "compiles"."""
    comp = [v for v in variants if v["name"].split("#")[0] == "torch-compile"]
    if len(comp) < 2:
        return variants
    ran = [v for v in comp if v.get("span_median_us") is not None]
    best = dict(min(ran, key=lambda v: v["span_median_us"]) if ran else comp[0])
    best["compiles"] = [
        {k: v.get(k) for k in ("name", "span_median_us", "compile_s", "error")} for v in comp
    ]
    best["name"] = "torch-compile"
    out = [v for v in variants if v not in comp]
    return out + [best]


def summarize_cell(cell: dict) -> dict:
    """rowfuse's span over the best peer's (floor excluded) and the fastest variant; for a
    cell timed with a cold L2 too, the same of the cold figures (keys ending in _cold) and
    the rate at which rowfuse's span reads the weights, warm and cold (GB/s)."""
    out = {}
    for key, sfx in (("span_median_us", ""), ("span_cold_median_us", "_cold")):
        spans = {
            v["name"]: v[key]
            for v in cell["variants"]
            if v.get(key) is not None and v["name"] != "empty"
        }
        if sfx and not spans:
            continue
        peers = {k: s for k, s in spans.items() if k != "rowfuse"}
        out["fastest" + sfx] = min(spans, key=spans.get) if spans else None
        if "rowfuse" in spans and peers:
            best = min(peers, key=peers.get)
            out.update(
                {
                    "best_peer" + sfx: best,
                    "ratio_to_best_peer" + sfx: spans["rowfuse"] / peers[best],
                }
            )
        if "rowfuse" in spans and "torch-compile" in spans:
            out["ratio_to_compile" + sfx] = spans["rowfuse"] / spans["torch-compile"]
        if "rowfuse" in spans and cell.get("weight_bytes"):
            out["weights_gbs" + sfx] = cell["weight_bytes"] / (spans["rowfuse"] * 1e3)
        # a throughput cell: rowfuse's span against the roofline of the measured ceilings
        if "rowfuse" in spans and cell.get("roofline") and not sfx:
            out["of_roofline"] = cell["roofline"]["roofline_us"] / spans["rowfuse"]
            out["roofline_limit"] = cell["roofline"]["limit"]
        # the plan's choice against the fastest of rowfuse's schedules that were timed, and
        # against the fastest variant of all (1.0: the choice is the fastest)
        ours = {k: v for k, v in spans.items() if k.startswith("rowfuse")}
        if "rowfuse" in spans:
            out["regret_rowfuse" + sfx] = spans["rowfuse"] / min(ours.values())
            out["regret_all" + sfx] = spans["rowfuse"] / min(spans.values())
    return out


def table(doc: dict) -> str:
    """Markdown: per kind and rows, the spans (us) and rowfuse's ratio to the best peer."""
    names = ["empty", "rowfuse", "rowfuse-conv", "cublaslt", "torch-eager", "torch-compile"]
    extra = {v["name"] for c in doc["cells"] for v in c["variants"]} & {n for _, n, _ in SIBLINGS}
    names[3:3] = sorted(extra - set(names))
    lines = [
        "| kind | rows | " + " | ".join(names) + " | rowfuse / best peer | fastest |",
        "|---|---|" + "---|" * len(names) + "---|---|",
    ]
    for cell in doc["cells"]:
        by = {v["name"]: v for v in cell["variants"]}
        s = cell.get("summary") or {}
        timings = [("span_median_us", "", "")]
        if "fastest_cold" in s:
            timings.append(("span_cold_median_us", "_cold", " (cold L2)"))
        for key, sfx, label in timings:

            def fmt(n, by=by, key=key):
                v = by.get(n)
                if v is None:
                    return "-"
                x = v.get(key)
                return f"{x:.2f}" if x is not None else "FAILED"

            ratio = s.get("ratio_to_best_peer" + sfx)
            r = f"{ratio:.2f}" if ratio is not None else "-"
            lines.append(
                f"| {cell['kind']} | {cell['rows']}{label} | "
                + " | ".join(fmt(n) for n in names)
                + f" | {r} | {s.get('fastest' + sfx) or '-'} |"
            )
    roof = [c for c in doc["cells"] if (c.get("summary") or {}).get("of_roofline") is not None]
    if roof:
        ceil = doc.get("ceilings") or {}
        lines += [
            "",
            f"Throughput cells against the roofline of the measured ceilings (copy "
            f"{ceil.get('copy_gbs', 0):.0f} GB/s, GEMM {ceil.get('gemm_tflops', 0):.0f} TFLOP/s):",
            "",
            "| kind | rows | roofline (us) | binds | rowfuse of the roofline | "
            "rowfuse / torch.compile |",
            "|---|---|---|---|---|---|",
        ]
        for c in roof:
            s = c["summary"]
            comp = s.get("ratio_to_compile")
            lines.append(
                f"| {c['kind']} | {c['rows']} | {c['roofline']['roofline_us']:.1f} | "
                f"{s['roofline_limit']} | {s['of_roofline']:.0%} | "
                + (f"{comp:.2f} |" if comp is not None else "- |")
            )
    return "\n".join(lines)


def run(args) -> dict:
    import torch

    from rowfuse.bench import harness

    if not torch.cuda.is_available():
        raise SystemExit("rowfuse.bench.chains: no CUDA device visible to torch")
    kinds = args.kinds.split(",") if args.kinds else list(CHAIN_KINDS)
    rows = [int(r) for r in args.rows.split(",")]
    todo = parse_cells(args.cells) if args.cells else cells(kinds, rows)
    props = torch.cuda.get_device_properties(0)
    doc = {
        "tool": "rowfuse.bench.chains",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_revision": harness.git_revision(),
        "seed": args.seed,
        "gpu": {
            "name": props.name,
            "sm_count": props.multi_processor_count,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "clocks_before": harness.gpu_clocks(),
        },
        "method": {
            "rounds": args.rounds,
            "observations": args.obs,
            "span": "CUPTI kernel records of every timed graph replay, first kernel start to "
            "last kernel end (rowfuse.bench.harness.time_interleaved)",
            "cold_l2": f"cells of at most {args.cold_l2_rows} rows timed again with "
            f"{harness.L2_FLUSH_BYTES} bytes written before every observation, outside its "
            "span",
            "compile_mode": args.compile_mode,
            "compile": f"best of {args.compiles} fresh compiles per shape by GPU span "
            "(static shapes, fullgraph)",
            "check": f"rel. L2 against the module in fp64 <= max({TOL_FLOOR:g}, "
            f"{TOL_FACTOR:g} x PyTorch eager fp16's)",
        },
        "cells": [],
        "not_run": [],
    }
    harness.init_profiler_for_graphs()
    if any(r in THROUGHPUT_ROWS.get(kind, ()) for kind, r in todo):
        doc["ceilings"] = measure_ceilings()
    t0 = time.monotonic()
    for i, (kind, r) in enumerate(todo):
        pkg = os.path.join(args.packages, package_name(kind, r))
        if args.deadline_s and time.monotonic() - t0 > args.deadline_s:
            doc["not_run"].append({"kind": kind, "rows": r, "why": "time budget spent"})
            continue
        if not os.path.isfile(os.path.join(pkg, "plan.json")):
            doc["cells"].append(
                {"kind": kind, "rows": r, "error": f"no package {pkg}", "variants": []}
            )
            continue
        try:
            cell = bench_cell(kind, r, pkg, args, args.seed + i)
        except Exception as e:
            cell = {
                "kind": kind,
                "rows": r,
                "variants": [],
                "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}",
            }
            harness.progress(f"{kind} x {r}: FAILED: {cell['error']}")
        if r in THROUGHPUT_ROWS.get(kind, ()) and "work" in cell:
            cell["roofline"] = roofline(cell["work"], doc["ceilings"])
        cell["summary"] = summarize_cell(cell)
        doc["cells"].append(cell)
        if args.output:
            _write(doc, args.output)
    doc["gpu"]["clocks_after"] = harness.gpu_clocks()
    if args.output:
        _write(doc, args.output)
    return doc


def _write(doc, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=float)
    os.replace(tmp, path)


def failures(doc: dict) -> list[str]:
    """Cells or variants that did not produce a checked figure."""
    bad = [f"{c['kind']} x {c['rows']}: {c['error']}" for c in doc["cells"] if c.get("error")]
    for c in doc["cells"]:
        for v in c["variants"]:
            if v.get("error") and v["name"] != "empty":
                bad.append(f"{c['kind']} x {c['rows']} {v['name']}: {v['error']}")
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m rowfuse.bench.chains",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--packages", required=True, help="folder of KIND-ROWS packages")
    p.add_argument("--kinds", default="", help=f"default: {','.join(CHAIN_KINDS)}")
    p.add_argument("--rows", default=",".join(map(str, ROWS)))
    p.add_argument(
        "--cells",
        default="",
        help="KIND:ROWS,... instead of --kinds x --rows (a kind may be a spec KIND@WIDTHS)",
    )
    p.add_argument(
        "--weights-map",
        default="",
        help="JSON of prepare_weights per package: write each weights.bin from the module first",
    )
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--obs", type=int, default=200)
    p.add_argument(
        "--cold-l2-rows",
        type=int,
        default=64,
        help="cells of at most this many rows are timed a second time with a cold L2 "
        "(default 64; -1: none)",
    )
    p.add_argument("--no-compile", dest="compile", action="store_false")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    p.add_argument(
        "--compiles",
        type=int,
        default=2,
        help="fresh torch.compile runs per shape, the fastest kept (default 2)",
    )
    p.add_argument(
        "--deadline-s",
        type=float,
        default=0.0,
        help="start no new cell after this many seconds (0: none)",
    )
    p.add_argument("-o", "--output", default="")
    p.add_argument("--table", default="", help="print the table of a written JSON and exit")
    p.add_argument(
        "--weights-only",
        action="store_true",
        help="write every package's weights.bin (--weights-map) and exit",
    )
    a = p.parse_args(argv)
    if a.weights_only:
        if not a.weights_map:
            p.error("--weights-only needs --weights-map")
        print(f"wrote weights.bin of {len(write_all_weights(a.packages, a.weights_map))} packages")
        return 0
    if a.table:
        print(table(json.load(open(a.table))))
        return 0
    doc = run(a)
    print(table(doc))
    bad = failures(doc)
    for b in bad:
        print("FAILED:", b, file=sys.stderr)
    if doc["not_run"]:
        print(f"not run (time budget): {len(doc['not_run'])} cells", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
