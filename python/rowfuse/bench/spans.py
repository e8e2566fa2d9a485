"""GPU span per timed observation from CUPTI kernel records (docs/benchmarking.md, (c)).

The Python host records CUPTI activity (torch.profiler, CUDA activity only) while it times
its observations, as the C host does, and attributes the kernel records to the observations
with the C library's rule (src/base/span_attr.c through librowfuse.so):

  - "correlation": every kernel of one cudaGraphLaunch carries that launch's CUPTI
    correlation id; the groups, in time order, must be the observations in execution order,
    each with exactly its graph's kernel count;
  - "order": records sorted by start and cut into consecutive runs of the known kernel
    counts, each run starting after the previous one ended (the observations are separated
    by a synchronize).

A variant that is not a graph replay of ours (XLA's executable, launched by JAX on its own
stream, one launch per kernel or XLA's own command buffers) has no single correlation id
per observation. When such "foreign" observations are interleaved with graph replays, the
records are split by launch: those whose correlation id is one of the trace's
cudaGraphLaunch calls belong to the graph replays (correlation attribution over those
observations), the rest to the foreign ones (order attribution over those, each call
holding the kernel count measured for it beforehand). `attribute_observations` does this
split and says in its result which rule served which observations.

Trace parsing and attribution need no GPU (tests feed synthetic traces); `CuptiSession`
needs torch with CUDA.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal

# the runtime call that replays a graph of ours (torch.cuda.CUDAGraph.replay)
GRAPH_LAUNCH_NAMES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000", "cudaGraphLaunch_ptsz")
ATTRIBUTIONS = ("correlation", "order")


class SpanError(RuntimeError):
    """Kernel records that do not fit the observations; the message names where."""


class _Record(ctypes.Structure):
    # rf_bench_kernel_record_t (src/base/span_attr.h)
    _fields_ = [
        ("start", ctypes.c_uint64),
        ("end", ctypes.c_uint64),
        ("correlation", ctypes.c_uint32),
    ]


_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        from rowfuse.capi import clib

        P = ctypes.POINTER
        sigs = {
            "rf_bench_span_attribute": (
                ctypes.c_void_p,
                [P(_Record), ctypes.c_size_t, P(ctypes.c_int), ctypes.c_size_t, ctypes.c_int]
                + [P(ctypes.c_double)],
            ),
        }
        _LIB = clib.bind(clib.library_path(), sigs, "rowfuse library")
    return _LIB


def attribute(records, expected, how: str = "correlation") -> list[float]:
    """rf_bench_span_attribute: records [(start_ns, end_ns, correlation)] of observations run
    in this order, observation j holding expected[j] kernels -> span of each in us.
    Raises SpanError with the C library's message when they do not fit."""
    from rowfuse.capi import clib

    if how not in ATTRIBUTIONS:
        raise ValueError(f"span attribution '{how}' is not one of: {', '.join(ATTRIBUTIONS)}")
    n = len(expected)
    if n == 0:
        raise ValueError("attribute: no observations")
    recs = (_Record * max(1, len(records)))()
    for i, (s, e, c) in enumerate(records):
        recs[i].start, recs[i].end, recs[i].correlation = int(s), int(e), int(c)
    exp = (ctypes.c_int * n)(*[int(k) for k in expected])
    out = (ctypes.c_double * n)()
    lib = _lib()
    st = lib.rf_bench_span_attribute(recs, len(records), exp, n, ATTRIBUTIONS.index(how), out)
    try:
        clib.raise_status(lib, st, f"GPU span ({how} attribution of {len(records)} records)")
    except clib.RowfuseError as e:
        raise SpanError(str(e)) from None
    return list(out)


# ---------------------------------------------------------------- the trace


@dataclass
class Trace:
    """What a CUPTI session saw: kernel records (start_ns, end_ns, correlation, name) and the
    correlation ids of the graph launches (cudaGraphLaunch runtime calls)."""

    kernels: list = field(default_factory=list)
    graph_launches: set = field(default_factory=set)
    launch_events: int = 0  # runtime/driver call records seen (0: the trace has none)


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value())


def parse_trace(trace: dict) -> Trace:
    """A Chrome trace (torch.profiler's export_chrome_trace) -> Trace. Timestamps are
    microseconds with nanosecond decimals; they are read exactly (Decimal)."""
    out = Trace()
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        args = e.get("args") or {}
        corr = args.get("correlation")
        if cat == "kernel":
            if corr is None:
                raise SpanError(f"kernel record '{e.get('name', '?')}' carries no correlation id")
            start = _ns(e["ts"])
            out.kernels.append((start, start + _ns(e.get("dur", 0)), int(corr), e.get("name", "")))
        elif cat in ("cuda_runtime", "cuda_driver"):
            out.launch_events += 1
            if e.get("name") in GRAPH_LAUNCH_NAMES and corr is not None:
                out.graph_launches.add(int(corr))
    return out


def load_trace(path: str) -> Trace:
    with open(path) as f:
        return parse_trace(json.load(f, parse_float=Decimal))


# ---------------------------------------------------------------- attribution with a split


@dataclass
class Attribution:
    spans: list  # span in us per observation, in execution order (None where unattributed)
    rules: dict  # "graph" / "foreign" -> the rule used for those observations
    error: str | None = None  # why some or all observations have no span
    names: dict = field(default_factory=dict)  # observation -> its kernels' names


def _attribute_part(part, idx, expected, rule, att: Attribution) -> None:
    """Attributes records `part` (start, end, correlation, name) to observations idx."""
    exp = [expected[j] for j in idx]
    got = attribute([r[:3] for r in part], exp, rule)
    ordered = sorted(part, key=lambda r: (r[0], r[1]))
    at = 0
    for j, k, span in zip(idx, exp, got, strict=True):
        att.spans[j] = span
        att.names[j] = sorted({r[3][:80] for r in ordered[at : at + k]})
        at += k


def attribute_observations(trace: Trace, kinds, expected, how: str = "correlation") -> Attribution:
    """Spans of observations run in order, observation j of kind kinds[j] ("graph": a replay
    of our CUDA graph; "foreign": any other launch, such as a JAX call) holding expected[j]
    kernels. Without foreign observations every record goes to `how`. With them, records
    are split by whether their correlation id is a cudaGraphLaunch's: graph ones by `how`,
    the rest by "order". A trace without graph-launch records cannot be split: then every
    record is attributed by "order" (valid because every observation ends in a
    synchronize)."""
    n = len(kinds)
    if n != len(expected):
        raise ValueError("attribute_observations: kinds and expected differ in length")
    recs = [(s, e, c, name) for s, e, c, name in trace.kernels]
    graph_idx = [j for j in range(n) if kinds[j] == "graph"]
    foreign_idx = [j for j in range(n) if kinds[j] != "graph"]
    if not foreign_idx:
        parts = [(graph_idx, recs, how, "graph replays")]
        rules = {"graph": how}
    elif not trace.graph_launches:
        # no graph-launch records to split by: one rule for all, in time order
        parts = [(list(range(n)), recs, "order", "observations")]
        rules = {"graph": "order", "foreign": "order"} if graph_idx else {"foreign": "order"}
    else:
        mine = [r for r in recs if r[2] in trace.graph_launches]
        other = [r for r in recs if r[2] not in trace.graph_launches]
        parts = [
            (graph_idx, mine, how, "graph replays"),
            (foreign_idx, other, "order", "other launches"),
        ]
        rules = {"graph": how, "foreign": "order"}
    att = Attribution([None] * n, rules)
    errors = []
    for idx, part, rule, what in parts:
        if not idx:
            if part:
                errors.append(f"{len(part)} kernel records of {what} but no such observation")
            continue
        try:
            _attribute_part(part, idx, expected, rule, att)
        except SpanError as e:
            errors.append(f"{what}: {e}")
    att.error = "; ".join(errors) or None
    return att


# ---------------------------------------------------------------- recording (needs CUDA)


_INITIALISED = False


def init_for_graphs() -> None:
    """CUPTI must be initialised before any graph is captured, or graph kernels go
    unrecorded; torch ships a helper for exactly this. Once per process."""
    global _INITIALISED
    if _INITIALISED:
        return
    _INITIALISED = True
    try:
        from torch.profiler import _utils

        _utils._init_for_cuda_graphs()
    except (ImportError, AttributeError):
        import torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]):
            torch.cuda.synchronize()


class CuptiSession:
    """`with CuptiSession() as s: ...` records CUPTI activity (kernels, runtime and driver
    calls) through torch.profiler; after the block, `s.trace` holds the parsed Trace."""

    def __init__(self):
        self.trace: Trace | None = None
        self._prof = None

    def __enter__(self):
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CUDA])
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        import torch

        torch.cuda.synchronize()
        self._prof.__exit__(*exc)
        if exc[0] is None:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "trace.json")
                self._prof.export_chrome_trace(path)
                self.trace = load_trace(path)
        self._prof = None
        return False


def capture_graph(fn, count=None, warmup: int = 2):
    """(graph, kernel nodes): a CUDA graph (torch.cuda.CUDAGraph) of one call of fn, after
    `warmup` calls on a side stream; `count(raw cudaGraph_t) -> int` counts its kernel
    nodes (None: the count is None). The caller keeps the graph alive."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    n = count(g.raw_cuda_graph()) if count else None
    g.instantiate()
    return g, n


def graph_replay_spans(graphs, kernels, replays: int) -> list[list[float]]:
    """GPU span of `replays` synchronized replays of each CUDA graph (torch.cuda.CUDAGraph,
    graph i holding kernels[i] kernels), interleaved graph by graph within each replay
    round, under one CUPTI session, correlation attribution: spans[i] lists graph i's."""
    import torch

    seq = []
    with CuptiSession() as s:
        for _ in range(replays):
            for i, g in enumerate(graphs):
                g.replay()
                torch.cuda.synchronize()
                seq.append(i)
    got = attribute_observations(s.trace, ["graph"] * len(seq), [kernels[i] for i in seq])
    if got.error:
        raise SpanError(got.error)
    out: list[list[float]] = [[] for _ in graphs]
    for i, span in zip(seq, got.spans, strict=True):
        out[i].append(span)
    return out
