"""How the bench brings its Python peers to full strength, without a GPU: torch.compile's
candidates (formulation x Inductor settings: the fastest checked one kept by the published
metric, every one recorded, a failed compile or check recorded and never kept, the budget
honoured), the exact formulations against rowfuse's comparison rule (and the fp16-first
one that computes another function rejected by it), the fresh code objects that keep each
compile apart, and the report's "Peer tuning" section built from the runs' tuning records
(Triton's chosen configuration, torch.compile's candidates or older runs' two compiles,
XLA, cuBLASLt's note)."""

import numpy as np
import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import inductor, report


class _Fake:
    """compile_fn / check / measure for inductor.choose without a GPU: candidate i returns
    i when called; spans[i] is its span, fail_compile / fail_check name candidates that
    break there; `clock` advances by compile_s[i] per compile (the budget's clock)."""

    def __init__(self, spans, fail_compile=(), fail_check=(), compile_s=None):
        self.spans, self.fail_compile, self.fail_check = spans, fail_compile, fail_check
        self.compile_s = compile_s or [0.0] * len(spans)
        self.compiled, self.checked, self.measured = [], [], []

    def compile_fn(self, mode, fn, call_args, patch):
        i = len(self.compiled)
        self.compiled.append((mode, fn.__code__.co_name, dict(patch)))
        _CLOCK[0] += self.compile_s[i]
        if i in self.fail_compile:
            raise RuntimeError(f"compile {i} broke\nsecond line")
        return lambda *a, i=i: _CALLED.append(i)

    def check(self, call):
        _CALLED.clear()
        call()
        (i,) = _CALLED
        self.checked.append(i)
        return "0.9 steps off" if i in self.fail_check else None

    def measure(self, calls):
        out = []
        for call in calls:
            _CALLED.clear()
            call()
            self.measured.append(_CALLED[0])
            out.append(self.spans[_CALLED[0]])
        return out


_CALLED: list = []
_CLOCK = [0.0]


@pytest.fixture
def clock(monkeypatch):
    _CLOCK[0] = 0.0
    monkeypatch.setattr(inductor.time, "perf_counter", lambda: _CLOCK[0])
    return _CLOCK


def _choose(fake, budget=1e9, only=None):
    return inductor.choose(
        "max-autotune-no-cudagraphs", (), fake.check, fake.measure, budget, fake.compile_fn, only
    )


def test_choose_keeps_the_fastest_span_and_records_every_candidate(clock):
    spans = [7.5, 5.0, 6.0, 4.25, 9.0]
    fake = _Fake(spans)
    fn, rec = _choose(fake)
    assert rec["chosen"] == 3 and rec["chosen_name"] == inductor.CANDIDATE_NAMES[3]
    assert rec["chosen_us"] == 4.25
    assert [r["span_us"] for r in rec["candidates"]] == spans
    assert [r["name"] for r in rec["candidates"]] == inductor.CANDIDATE_NAMES
    # every candidate compiled under its own code object with its own settings
    assert len({c[1] for c in fake.compiled}) == len(spans)
    assert [c[2] for c in fake.compiled] == [c[2] for c in inductor.CANDIDATES]
    _CALLED.clear()
    fn()
    assert _CALLED == [3]
    assert rec["metric"].startswith("graph-replay GPU span")


def test_choose_never_keeps_a_candidate_that_fails_its_check_or_compile(clock):
    # the fastest fails its check, the next fastest fails to compile
    fake = _Fake([7.0, 6.0, 5.0, 1.0, 2.0], fail_compile={4}, fail_check={3})
    fn, rec = _choose(fake)
    runs = rec["candidates"]
    assert runs[3]["error"] == "check: 0.9 steps off" and "span_us" not in runs[3]
    assert runs[4]["error"] == "RuntimeError: compile 4 broke | second line"
    assert "span_us" not in runs[4]
    assert rec["chosen"] == 2 and fake.measured == [0, 1, 2]
    fake = _Fake([1.0, 1.0], fail_check={0, 1})
    fn, rec = _choose(fake, only=set(inductor.CANDIDATE_NAMES[:2]))
    assert fn is None and "chosen" not in rec and fake.measured == []


def test_choose_honours_the_budget_but_always_runs_the_first_two(clock):
    fake = _Fake([3.0, 2.0, 1.0, 1.0, 1.0], compile_s=[30.0, 30.0, 30.0, 30.0, 30.0])
    fn, rec = _choose(fake, budget=45.0)
    runs = rec["candidates"]
    assert [("skipped" in r) for r in runs] == [False, False, True, True, True]
    assert runs[2]["skipped"] == "compile budget of 45 s spent"
    assert rec["chosen"] == 1 and len(fake.compiled) == 2
    fake = _Fake([3.0, 2.0, 1.0, 1.0, 1.0], compile_s=[10.0] * 5)
    _, rec = _choose(fake, budget=25.0)
    assert [("skipped" in r) for r in rec["candidates"]] == [False, False, False, True, True]


def test_choose_only_the_named_candidates(clock):
    fake = _Fake([2.0, 1.0])
    _, rec = _choose(fake, only={"mm-fp32", "addmm-fp32+cd"})
    assert [r["name"] for r in rec["candidates"]] == ["mm-fp32", "addmm-fp32+cd"]
    assert rec["chosen_name"] == "addmm-fp32+cd"


def _case(shape, seed):
    torch = pytest.importorskip("torch")
    from rowfuse.capi import clib

    c = clib.mlp_case(*shape, seed)
    return c, [torch.from_numpy(a) for a in (c.x, c.w1, c.b1, c.w2, c.b2)]


@pytest.mark.parametrize(
    "shape", [(49, 48, 96), (1024, 64, 256)], ids=lambda s: "x".join(map(str, s))
)
def test_exact_formulations_pass_and_fp16_first_fails(shape):
    """Each candidate formulation (its CPU form: the same products in fp32, where cuBLAS's
    fp32-output GEMMs have no CPU kernel) passes rowfuse's comparison rule; rounding X W1
    to fp16 before adding b1 computes another function and fails it, by more than a step,
    at the reference shape and at a held-out shape with C = 64."""
    import torch
    from rowfuse.capi import clib

    seed = 11
    print(f"seed {seed}")
    c, t = _case(shape, seed)
    for name, fn in inductor.FORMULATIONS.items():
        y = torch.empty(shape[0], shape[1])
        fn(*t, y)
        verdict = clib.compare(y.numpy(), c)
        assert verdict["passed"], (name, verdict["message"])
    y = torch.empty(shape[0], shape[1])
    bench.torch_eager_block(*t, y)
    assert clib.compare(y.numpy(), c)["passed"]
    y = torch.empty(shape[0], shape[1])
    inductor.rounded_first(*t, y)
    verdict = clib.compare(y.numpy(), c)
    assert not verdict["passed"] and verdict["steps"] > 1.0, verdict["message"]


def test_fresh_code_computes_the_formulation_with_its_own_code():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.uniform(-1, 1, (5, 8)).astype(np.float16))
    w1 = torch.from_numpy(rng.uniform(-1, 1, (8, 16)).astype(np.float16))
    b1 = torch.from_numpy(rng.uniform(-0.5, 0.5, 16).astype(np.float32))
    w2 = torch.from_numpy(rng.uniform(-1, 1, (16, 8)).astype(np.float16))
    b2 = torch.from_numpy(rng.uniform(-0.5, 0.5, 8).astype(np.float32))
    want = torch.empty(5, 8)
    inductor.mm_fp32(x, w1, b1, w2, b2, want)
    fns = []  # kept alive, so that no code object's id is reused
    for name, form, _ in inductor.CANDIDATES:
        fn = inductor.fresh_code(inductor.FORMULATIONS[form], name)
        got = torch.empty(5, 8)
        fn(x, w1, b1, w2, b2, got)
        assert torch.allclose(got, want, rtol=1e-6, atol=1e-6)
        fns.append(fn)
    codes = {id(f.__code__) for f in fns} | {id(f.__code__) for f in inductor.FORMULATIONS.values()}
    assert len(codes) == len(fns) + len(inductor.FORMULATIONS)


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


def test_report_renders_compile_candidates_and_xla():
    compiled = {
        "name": "torch-compile",
        "label": "torch.compile + graph",
        "tuning": {
            "mode": "max-autotune-no-cudagraphs",
            "metric": "graph-replay GPU span (CUPTI), median",
            "candidates": [
                {"name": "mm-fp32", "compile_s": 12.5, "span_us": 6.4},
                {"name": "mm-fp32+cd", "compile_s": 9.0, "span_us": 5.9},
                {"name": "upcast-tf32+cd", "compile_s": 3.0, "error": "check: 2 steps"},
                {"name": "addmm-fp32+cd", "skipped": "compile budget of 40 s spent"},
                {"name": "upcast-tf32+cd+tma", "compile_s": 0.1, "error": "E" * 200},
            ],
            "chosen": 1,
            "chosen_name": "mm-fp32+cd",
            "chosen_us": 5.9,
        },
    }
    xla = {
        "name": "xla",
        "label": "XLA (jax.jit)",
        "tuning": {"jax": "0.11.0", "xla_flags": "(none)", "compile_s": 0.8, "kernels": 3},
    }
    text = "\n".join(report.render_tuning([_doc([compiled, xla])]))
    assert "mm-fp32 (12.5 s, 6.40 us), mm-fp32+cd (9.0 s, 5.90 us)" in text
    assert "upcast-tf32+cd (3.0 s, check: 2 steps)" in text
    assert "addmm-fp32+cd (compile budget of 40 s spent), upcast" in text
    assert "...); kept mm-fp32+cd" in text
    assert "by graph-replay GPU span (CUPTI), median" in text
    assert f"upcast-tf32+cd+tma (0.1 s, {'E' * 87}...)" in text  # long errors cut
    assert (
        "XLA (jax.jit): jax 0.11.0, compile-time GEMM autotuning" in text
        and "3 kernel(s) per call" in text
    )
    compiled["tuning"].pop("chosen_name")
    assert "; none kept" in "\n".join(report.render_tuning([_doc([compiled])]))
