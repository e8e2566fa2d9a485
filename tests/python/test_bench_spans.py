"""The Python host's GPU span per timed observation, without a GPU: a Chrome trace as
torch.profiler writes it (synthetic, built here from known replays) is parsed exactly, its
kernel records attributed to the observations by the C library's rule (correlation id;
src/base/span_attr.c through librowfuse.so), XLA-like launches that are not graph replays
split off by the cudaGraphLaunch correlation ids and attributed in time order, and every
mismatch (a lost record, a stray launch) named rather than dropped. Also the interleaved
order (every pass a seeded permutation) and the per-variant summaries the JSON gets."""

import random
import re

import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import spans

SEED = 20261204


def _trace(observations, gap_ns=5_000, graph_launch="cudaGraphLaunch", launch_records=True):
    """A Chrome trace of observations run one after another, each synchronized: an
    observation is ("graph", [kernel durations ns]) - one cudaGraphLaunch whose kernels
    share its correlation id - or ("foreign", [durations]) - one driver launch (its own
    correlation id) per kernel. Kernels of one observation start 300 ns apart and may
    overlap. Returns (trace dict, expected spans in us)."""
    rng = random.Random(SEED)
    events, want = [], []
    t, corr = 1_700_000_000_000_000, 100  # ns, as large as CUPTI's
    for kind, durs in observations:
        first = t
        ends = []
        for k, d in enumerate(durs):
            if kind == "graph" and k == 0 or kind != "graph":
                corr += rng.randint(1, 3)
                name = graph_launch if kind == "graph" else "cuLaunchKernel"
                cat = "cuda_runtime" if kind == "graph" else "cuda_driver"
                if launch_records:
                    events.append(
                        {
                            "ph": "X",
                            "cat": cat,
                            "name": name,
                            "ts": f"{(t - 2000) / 1000:.3f}",
                            "dur": "1.000",
                            "args": {"correlation": corr},
                        }
                    )
            start = t + 300 * k
            ends.append(start + d)
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"{kind}_kernel_{k}",
                    "ts": f"{start / 1000:.3f}",
                    "dur": f"{d / 1000:.3f}",
                    "args": {"correlation": corr, "stream": 7},
                }
            )
        want.append((max(ends) - first) / 1000.0)
        t = max(ends) + gap_ns
    rng.shuffle(events)  # CUPTI hands buffers over out of order
    return {"traceEvents": events}, want


def _parse(trace):
    import json
    from decimal import Decimal

    # through JSON text with the times as bare numbers, as export_chrome_trace writes them
    text = re.sub(r'"(ts|dur)": "([0-9.]+)"', r'"\1": \2', json.dumps(trace))
    return spans.parse_trace(json.loads(text, parse_float=Decimal))


def _obs(n, kinds=("graph",), seed=SEED):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.choice(kinds)
        k = rng.randint(1, 4)
        out.append((kind, [rng.randint(400, 40_000) for _ in range(k)]))
    return out


def test_parse_reads_nanoseconds_exactly():
    trace, want = _trace([("graph", [1234, 999]), ("foreign", [5])])
    t = _parse(trace)
    assert len(t.kernels) == 3 and len(t.graph_launches) == 1 and t.launch_events == 2
    k = sorted(t.kernels)
    assert k[0][1] - k[0][0] == 1234 and k[1][1] - k[1][0] == 999 and k[2][1] - k[2][0] == 5
    assert k[1][0] - k[0][0] == 300


def test_parse_refuses_a_kernel_without_correlation():
    trace, _ = _trace([("graph", [1000])])
    for e in trace["traceEvents"]:
        e["args"].pop("correlation")
    with pytest.raises(spans.SpanError, match="carries no correlation id"):
        spans.parse_trace(trace)


def test_graph_replays_by_correlation_match_the_known_spans():
    print(f"seed {SEED}")
    obs = _obs(300)
    trace, want = _trace(obs)
    got = spans.attribute_observations(_parse(trace), [k for k, _ in obs], [len(d) for _, d in obs])
    assert got.error is None and got.rules == {"graph": "correlation"}
    assert got.spans == pytest.approx(want, abs=1e-9)
    assert got.names[0] == sorted(f"graph_kernel_{k}" for k in range(len(obs[0][1])))


def test_foreign_launches_split_off_and_attributed_in_order():
    obs = _obs(400, kinds=("graph", "graph", "foreign"))
    trace, want = _trace(obs)
    kinds = [k for k, _ in obs]
    got = spans.attribute_observations(_parse(trace), kinds, [len(d) for _, d in obs])
    assert got.error is None and got.rules == {"graph": "correlation", "foreign": "order"}
    assert got.spans == pytest.approx(want, abs=1e-9)
    j = kinds.index("foreign")
    assert all(n.startswith("foreign_kernel_") for n in got.names[j])


def test_without_graph_launch_records_everything_goes_by_order():
    obs = _obs(50, kinds=("graph", "foreign"))
    trace, want = _trace(obs, launch_records=False)
    got = spans.attribute_observations(_parse(trace), [k for k, _ in obs], [len(d) for _, d in obs])
    assert got.error is None and set(got.rules.values()) == {"order"}
    assert got.spans == pytest.approx(want, abs=1e-9)


def test_a_lost_record_is_named_not_dropped():
    obs = _obs(60, kinds=("graph", "foreign"))
    trace, _ = _trace(obs)
    kinds, expected = [k for k, _ in obs], [len(d) for _, d in obs]
    # the graph replay of observation 20 holds one more kernel than its records say
    g = [j for j in range(len(obs)) if kinds[j] == "graph"][5]
    expected[g] += 1
    got = spans.attribute_observations(_parse(trace), kinds, expected)
    assert "graph replays" in got.error and "observation 5" in got.error
    assert all(got.spans[j] is None for j in range(len(obs)) if kinds[j] == "graph")
    assert all(got.spans[j] is not None for j in range(len(obs)) if kinds[j] == "foreign")


def test_a_stray_launch_among_graph_replays_is_an_error():
    obs = _obs(30) + [("foreign", [1000])]
    trace, _ = _trace(obs)
    # the bench believes all 31 observations were graph replays of 1..4 kernels
    kinds = ["graph"] * 30
    got = spans.attribute_observations(_parse(trace), kinds, [len(d) for _, d in obs[:30]])
    assert got.error and "left over" in got.error


def test_c_attribution_directly():
    recs = [(2000, 2600, 7), (1000, 1500, 5), (1100, 1900, 5)]  # out of order
    assert spans.attribute(recs, [2, 1]) == pytest.approx([0.9, 0.6])
    assert spans.attribute(recs, [2, 1], "order") == pytest.approx([0.9, 0.6])
    with pytest.raises(spans.SpanError, match="observation 0: 2 kernel"):
        spans.attribute(recs, [1, 2])
    with pytest.raises(ValueError, match="not one of"):
        spans.attribute(recs, [2, 1], "nearest")


def test_interleaved_order_is_a_seeded_permutation_per_pass():
    seq = bench.interleaved_order(5, 3, 40, SEED)
    assert len(seq) == 5 * 3 * 40
    passes = [seq[i : i + 5] for i in range(0, len(seq), 5)]
    assert all(sorted(p) == list(range(5)) for p in passes)
    assert len({tuple(p) for p in passes}) > 20  # shuffled, not rotated
    assert seq == bench.interleaved_order(5, 3, 40, SEED)
    assert seq != bench.interleaved_order(5, 3, 40, SEED + 1)
    firsts = [p[0] for p in passes]
    assert all(firsts.count(i) >= 10 for i in range(5))  # every variant leads at times


class _V:
    def __init__(self, name, kind, kernels):
        self.name, self.kind, self.kernels = name, kind, kernels
        self.result = {"name": name}


def test_record_timing_and_spans_per_variant():
    variants = [_V("empty", "graph", 1), _V("torch-eager", "graph", 3), _V("xla", "foreign", 2)]
    seq = bench.interleaved_order(3, 1, 10, SEED)
    runs = [
        (
            "graph" if variants[i].kind == "graph" else "foreign",
            [700 + 10 * j] * variants[i].kernels,
        )
        for j, i in enumerate(seq)
    ]
    trace, want = _trace(runs)
    att = spans.attribute_observations(
        _parse(trace), [r[0] for r in runs], [len(r[1]) for r in runs]
    )
    timed = {"_span": att}
    for n, v in enumerate(variants):
        idx = [j for j, i in enumerate(seq) if i == n]
        timed[v.name] = {
            "event": [] if v.kind == "foreign" else [5.0 + j for j in idx],
            "host": [10.0 + j for j in idx],
            "span": [att.spans[j] for j in idx],
            "names": att.names[idx[0]],
        }
    bench.record_timing(variants, timed, "graph")
    bench.record_spans(variants, timed)
    for n, v in enumerate(variants):
        g = v.result["graph"]
        idx = [j for j, i in enumerate(seq) if i == n]
        spans_v = sorted(want[j] for j in idx)
        assert g["span_us"]["count"] == 10
        assert g["span_us"]["median"] == pytest.approx((spans_v[4] + spans_v[5]) / 2)
        assert g["span_source"] == "timed-observations"
        assert (g["event_us"] is None) == (v.kind == "foreign")
        assert v.result["kernels"] == v.kernels
    assert variants[2].result["graph"]["span_attribution"] == "order"
    assert variants[0].result["graph"]["span_attribution"] == "correlation"
    # an unattributed observation makes the variant FAILED, never a shorter sample
    timed["xla"]["span"][3] = None
    att.error = "other launches: observation 3: ..."
    variants[2].result.pop("kernels")
    bench.record_spans(variants[2:], timed)
    assert variants[2].result["graph"]["span_us"] is None
    assert variants[2].result["error"].startswith("GPU span: other launches")


def test_cold_l2_flush_records_are_attributed_and_dropped():
    """time_interleaved(flush=...) replays a flush graph (one fill kernel, 60 us) before
    every observation: attribute_spans gives each variant exactly its own spans, never a
    flush's, and a flush kernel count that is wrong fails the attribution, not silently."""
    variants = [_V("rowfuse", "graph", 1), _V("torch-compile", "graph", 3)]
    flush = _V("l2-flush", "graph", 1)
    seq = bench.interleaved_order(2, 1, 8, SEED)
    done, runs = [], []
    for j, i in enumerate(seq):
        done += [-1, i]
        runs += [("graph", [60_000]), ("graph", [900 + 10 * j] * variants[i].kernels)]
    trace, want = _trace(runs)
    out = {v.name: {"event": [], "host": [], "span": None} for v in variants}
    bench.attribute_spans(out, _parse(trace), variants, done, flush)
    assert out["_span"].error is None
    for n, v in enumerate(variants):
        mine = [want[k] for k, i in enumerate(done) if i == n]
        assert out[v.name]["span"] == pytest.approx(mine)
        assert max(out[v.name]["span"]) < 60.0  # no flush in any variant's figure
    # the flush's kernels counted wrong: the attribution reports it
    out = {v.name: {"event": [], "host": [], "span": None} for v in variants}
    bench.attribute_spans(out, _parse(trace), variants, done, _V("l2-flush", "graph", 2))
    assert out["_span"].error
