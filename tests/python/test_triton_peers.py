"""How the bench brings its Python peers to full strength, without a GPU: torch.compile's
two fresh compiles (the faster kept, both recorded, a failed one recorded and survived),
the fresh code objects that keep each compile apart, and the report's "Peer tuning"
section built from the runs' tuning records (Triton's chosen configuration, the two
compiles, cuBLASLt's note)."""

import numpy as np
import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import report


def _fake_compile(times, fail=()):
    """A compile_fn that returns a callable tagged with its index, or raises."""
    calls = []

    def compile_fn(mode, fn, call_args):
        i = len(calls)
        calls.append((mode, fn.__code__.co_name))
        if i in fail:
            raise RuntimeError(f"compile {i} broke\nsecond line")
        return lambda *a, i=i: i

    def time_us(f):
        return times[f()]

    return compile_fn, time_us, calls


def test_compile_twice_keeps_the_faster_and_records_both():
    compile_fn, time_us, calls = _fake_compile([7.5, 5.0])
    fn, rec = bench.compile_twice("max-autotune-no-cudagraphs", (), time_us, compile_fn)
    assert fn() == 1
    assert rec["mode"] == "max-autotune-no-cudagraphs"
    assert [r["graph_us"] for r in rec["compiles"]] == [7.5, 5.0]
    assert rec["chosen"] == 1 and rec["spread"] == 1.5
    # each compile got a code object of its own
    assert [c[1] for c in calls] == ["_compiled_block_0", "_compiled_block_1"]


def test_compile_twice_survives_one_failure_and_reports_two():
    compile_fn, time_us, _ = _fake_compile([3.0, 4.0], fail={0})
    fn, rec = bench.compile_twice("m", (), time_us, compile_fn)
    assert fn() == 1 and rec["chosen"] == 1 and "spread" not in rec
    assert rec["compiles"][0]["error"] == "RuntimeError: compile 0 broke"
    compile_fn, time_us, _ = _fake_compile([3.0, 4.0], fail={0, 1})
    fn, rec = bench.compile_twice("m", (), time_us, compile_fn)
    assert fn is None and "chosen" not in rec and len(rec["compiles"]) == 2


def test_fresh_blocks_compute_the_block_with_their_own_code():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.uniform(-1, 1, (5, 8)).astype(np.float16))
    w1 = torch.from_numpy(rng.uniform(-1, 1, (8, 16)).astype(np.float16))
    b1 = torch.from_numpy(rng.uniform(-0.5, 0.5, 16).astype(np.float32))
    w2 = torch.from_numpy(rng.uniform(-1, 1, (16, 8)).astype(np.float16))
    b2 = torch.from_numpy(rng.uniform(-0.5, 0.5, 8).astype(np.float32))
    want = torch.empty(5, 8)
    bench._compiled_block(x, w1, b1, w2, b2, want)
    codes = set()
    for tag in (0, 1):
        fn = bench._fresh_block(tag)
        got = torch.empty(5, 8)
        fn(x, w1, b1, w2, b2, got)
        assert torch.equal(got, want)
        codes.add(id(fn.__code__))
    assert len(codes | {id(bench._compiled_block.__code__)}) == 3


def _doc(variants):
    return {"runs": [{"shape": {"rows": 49, "channels": 48, "hidden": 96}, "variants": variants}]}


def test_report_renders_each_peers_tuning():
    triton = {
        "name": "triton-fused",
        "label": "Triton fused + graph",
        "tuning": {
            "chosen_label": "m16-h32-w4-s3",
            "chosen_us": 2.1,
            "timed": 43,
            "space": 96,
            "failed": [],
            "default_us": 2.5,
            "tune_s": 12.0,
        },
    }
    compiled = {
        "name": "torch-compile",
        "label": "torch.compile + graph",
        "tuning": {
            "mode": "max-autotune-no-cudagraphs",
            "compiles": [{"compile_s": 12.8, "graph_us": 7.6}, {"compile_s": 11.0, "error": "X"}],
            "chosen": 0,
        },
    }
    lt = {"name": "cublaslt", "label": "cuBLASLt (C) + graph", "note": "tuned at 49 rows: ..."}
    eager = {"name": "torch-eager", "label": "PyTorch eager + graph"}
    lines = report.render_tuning([_doc([eager, triton, compiled, lt])])
    text = "\n".join(lines)
    assert lines[0] == "## Peer tuning"
    assert "m16-h32-w4-s3 2.10 us, fastest of 43 timed (96 in the space, 0 failed" in text
    assert "untuned default 2.50 us" in text
    assert "#1: 12.8 s, 7.60 us/call, #2: 11.0 s, X; kept #1" in text
    assert "49x48x96, cuBLASLt (C) + graph: tuned at 49 rows" in text
    assert "PyTorch eager" not in text
    assert report.render_tuning([_doc([eager])]) == []
