"""The conventional schedule of a chain (`rowfuse compile --schedule conventional`), without a
GPU: the planner's segments (one kernel per linear or gated stage with its epilogue, a norm
that feeds a linear in that linear's kernel), the scratch between kernels, the column split,
the generator's PTX for every kernel, and a numpy model of the kernels that follows
plan.json alone: each kernel reads its inputs from X or the scratch at the recorded columns
and dtypes, runs its stages in fp32 storing each value at its dtype, and writes what later
kernels read back into the scratch. The model's Y must lie within the chain reference's
per-element bound, and must fail it when one value a later kernel reads is not stored (the
scratch keeps its NaN fill) or is stored at the wrong columns. Needs the rowfuse binary
(RF_BIN), librowfuse (ROWFUSE_LIB), torch + onnx and the CuTe DSL (the generator)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from cli_util import rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402
from test_chain_suite import reference  # noqa: E402

F32 = np.float32

# kind -> the stage ops of each kernel, in launch order, at 100 rows (a norm after a
# matmul has a kernel of its own at few rows)
SEGMENTS = {
    "gpt2_ffn": [["norm", "linear"], ["linear"]],
    "bert_ffn": [["linear"], ["linear"], ["norm"]],
    "llama_ffn": [["norm", "gated"], ["linear"]],
    "tcnn_mlp": [["linear"], ["linear"], ["linear"], ["linear"]],
    "stacked": [["linear"], ["linear"], ["linear"], ["linear"]],
    "classifier_probs": [["norm", "linear"], ["linear"], ["norm"]],
}


def _act(name: str, z):
    """fp32 activations of the kernel model (the kinds above use these)."""
    if name == "relu":
        return np.maximum(z, F32(0))
    if name == "gelu_erf":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return (F32(0.5) * z * (F32(1) + erf(z / math.sqrt(2.0)).astype(F32))).astype(F32)
    if name == "gelu_tanh":
        u = F32(math.sqrt(2.0 / math.pi)) * (z + F32(0.044715) * z * z * z)
        return F32(0.5) * z * (F32(1) + np.tanh(u))
    if name == "silu":
        return z / (F32(1) + np.exp(-z))
    if name == "identity":
        return z
    raise AssertionError(f"the kernel model has no {name}")


def _store(v, dtype):
    return v.astype(np.float16).astype(F32) if dtype == "f16" else v.astype(F32)


class Model:
    """The conventional schedule's kernels as plan.json describes them (module docstring)."""

    def __init__(self, pkg):
        self.plan = json.loads((pkg / "plan.json").read_text())
        ch = self.plan["chain"]
        raw = np.fromfile(pkg / "weights.bin", dtype=np.uint8)
        self.wh = raw[ch["wh_offset"] : ch["wh_offset"] + 2 * ch["wh_elems"]].view(np.float16)
        self.wf = raw[ch["wf_offset"] : ch["wf_offset"] + 4 * ch["wf_elems"]].view(np.float32)
        self.aux_row = ch.get("aux_row", 0)

    def run(self, x16, skip_store=None, shift_col=None):
        rows = x16.shape[0]
        aux = np.full((rows, max(self.aux_row, 8)), np.nan, dtype=np.float16)
        y = None
        for k in self.plan["kernels"]:
            vals = {v["id"]: v for v in k["values"]}
            env = {}
            seg = k["segment"]
            for i in seg["inputs"] + seg["direct"] + seg["streamed"]:
                v = vals[i]
                if i == 0:
                    env[0] = x16.astype(F32)
                else:
                    env[i] = self._aux_read(aux, v)
            for s in k["stages"]:
                d = vals[s["dst"]]
                out = self._stage(s, env, d)
                env[s["dst"]] = _store(out, d["dtype"])
                if d["global"] == "aux" and (s["dst"], k["name"]) != skip_store:
                    col = d["aux_col"] + (8 if s["dst"] == shift_col else 0)
                    self._aux_write(aux, dict(d, aux_col=col), env[s["dst"]])
                if d["global"] == "y":
                    y = env[s["dst"]]
        return y

    @staticmethod
    def _cols(v):
        per = 1 if v["dtype"] == "f16" else 2
        return v["aux_col"], v["aux_col"] + v["width"] * per

    def _aux_read(self, aux, v):
        a, b = self._cols(v)
        block = np.ascontiguousarray(aux[:, a:b])
        return block.astype(F32) if v["dtype"] == "f16" else block.view(np.float32).copy()

    def _aux_write(self, aux, v, val):
        a, b = self._cols(v)
        b = min(b, aux.shape[1])  # (a shifted store may run past the row: cut there)
        if v["dtype"] == "f16":
            aux[:, a:b] = val[:, : b - a].astype(np.float16)
        else:
            aux[:, a:b] = np.ascontiguousarray(val[:, : (b - a) // 2].astype(F32)).view(np.float16)

    def _w(self, off, k, n):
        return self.wh[off : off + k * n].reshape(k, n).astype(F32)

    def _b(self, off, n):
        return self.wf[off : off + n] if off >= 0 else F32(0)

    def _stage(self, s, env, d):
        op = s["op"]
        if op == "linear":
            z = env[s["src"]] @ self._w(s["w"], s["k"], s["n"]) + self._b(s["b"], s["n"])
            for e in s["epilogue"]:
                if e["op"] == "act":
                    z = _act(e["fn"], z)
                elif e["op"] == "add":
                    z = z + env[e["src"]]
                else:
                    z = z * env[e["src"]]
            return z
        if op == "gated":
            g = env[s["src"]] @ self._w(s["wg"], s["k"], s["n"]) + self._b(s["bg"], s["n"])
            u = env[s["src"]] @ self._w(s["wu"], s["k"], s["n"]) + self._b(s["bu"], s["n"])
            return _act(s["fn"], g) * u
        if op == "act":
            return _act(s["fn"], env[s["src"]])
        if op == "add":
            return env[s["a"]] + env[s["b"]]
        assert op == "norm"
        x = env[s["src"]]
        w = d["width"]
        if s["kind"] == "softmax":
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if s["kind"] == "layernorm":
            m = x.mean(axis=1, keepdims=True, dtype=F32)
            xc = x - m
        else:
            xc = x
        var = (xc * xc).mean(axis=1, keepdims=True, dtype=F32)
        z = xc / np.sqrt(var + F32(s["eps"]))
        if s.get("gamma", -1) >= 0:
            z = z * self.wf[s["gamma"] : s["gamma"] + w]
        if s.get("beta", -1) >= 0:
            z = z + self.wf[s["beta"] : s["beta"] + w]
        return z


def _worst(y, ref, bound) -> float:
    """The largest |y - ref| / bound (an error where the bound is 0 counts as infinite)."""
    err = np.abs(y.astype(np.float64) - ref)
    return float(
        np.max(
            np.where(bound > 0, err / np.where(bound > 0, bound, 1), np.where(err > 0, np.inf, 0))
        )
    )


def _compile(kind, tmp, rows, **widths):
    module, ex = blocks.make(kind, small=True, rows=rows, **widths)
    model = export(module, ex, rows, str(tmp / f"{kind}.onnx"))
    out = tmp / "pkg"
    p = rowfuse("compile", model, "--rows", rows, "--schedule", "conventional", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    return model, out


@pytest.mark.parametrize("kind", sorted(SEGMENTS))
def test_conventional_schedule(kind, tmp_path):
    pytest.importorskip("cutlass")
    rows = 100
    model, pkg = _compile(kind, tmp_path, rows)
    plan = json.loads((pkg / "plan.json").read_text())
    facts = {k["name"]: k for k in json.loads((pkg / "kernels.json").read_text())["kernels"]}
    ks = plan["kernels"]
    assert plan["schedule"] == "conventional"
    # the segments: contiguous stage ranges covering the chain, one matmul each
    assert [[s["op"] for s in k["stages"]] for k in ks] == SEGMENTS[kind]
    firsts = [k["segment"]["first_stage"] for k in ks]
    assert firsts[0] == 0 and firsts == sorted(firsts)
    chain_stages = plan["chain"]["stages"]
    assert [s for k in ks for s in k["stages"]] == chain_stages
    for i, k in enumerate(ks):
        seg = k["segment"]
        assert seg["index"] == i and seg["count"] == len(ks)
        assert seg["aux_row"] == plan["chain"].get("aux_row", 0)
        f = facts[k["name"]]
        has_mm = any(s["op"] in ("linear", "gated") for s in k["stages"])
        assert (f["ptx_mma"] > 0) == has_mm and f.get("sass_local", 0) == 0, f
        assert k["blocks_per_sm"] >= 1 and k["local_ops"] == 0
        # a split covers the matmul's n chunks; a norm after the matmul keeps whole rows
        if seg["split_stage"] >= 0:
            mm = chain_stages[seg["split_stage"]]
            assert seg["slices"] * seg["slice_chunks"] >= mm["n_pad"] // mm["n_chunk"]
            after = [
                s["op"] for s in chain_stages[seg["split_stage"] + 1 : firsts[i] + len(k["stages"])]
            ]
            assert set(after) <= {"act", "add"}
        else:
            assert seg["slices"] == 1
    # the scratch columns of the values between kernels never overlap
    spans = sorted(Model._cols(v) for v in ks[0]["values"] if v["global"] == "aux")
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    table = (pkg / "rf_pkg_table.h").read_text()
    assert "RF_PKG_SEG_KERNELS(X) " + " ".join(f"X({k['name']})" for k in ks) in table
    # the kernel model of the plan against the chain's mixed reference and its bound
    rng = np.random.default_rng(11)
    x16 = rng.standard_normal((rows, plan["chain"]["in_width"])).astype(np.float16)
    ref, bound = reference(model, x16, mixed=True)
    m = Model(pkg)
    y = m.run(x16)
    assert np.isfinite(y).all() and _worst(y, ref, bound) <= 1.0, _worst(y, ref, bound)
    # planted: a value a later kernel reads is not stored, or stored 8 columns off
    handed = [(v["id"], k["name"]) for k in ks for v in k["values"] if v["global"] == "aux"]
    produced = {s["dst"]: k["name"] for k in ks for s in k["stages"]}
    for vid, _ in handed[:1]:
        bad = m.run(x16, skip_store=(vid, produced[vid]))
        assert not np.isfinite(bad).all() or _worst(bad, ref, bound) > 1.0
        shifted = m.run(x16, shift_col=vid)
        assert not np.isfinite(shifted).all() or _worst(shifted, ref, bound) > 1.0


def test_a_wide_input_streams_through_the_ring(tmp_path):
    """A down projection from a 16,384-wide hidden: a 16-row tile of it (512 KB) does not fit
    one block, so the kernel streams it in k chunks through the weight ring beside W (no
    slot), and the plan's kernels still compute the chain within its bound."""
    pytest.importorskip("cutlass")
    rows = 40
    model, pkg = _compile("gpt2_ffn", tmp_path, rows, c=128, h=16384)
    plan = json.loads((pkg / "plan.json").read_text())
    ks = plan["kernels"]
    down = ks[-1]
    (mm,) = [s for s in down["stages"] if s["op"] == "linear"]
    assert mm.get("a_stream") == 1 and down["segment"]["streamed"] == [mm["src"]]
    src = next(v for v in down["values"] if v["id"] == mm["src"])
    assert src["smem_offset"] == -1 and src["global"] == "aux"
    assert down["smem_bytes"] < 232448
    facts = {k["name"]: k for k in json.loads((pkg / "kernels.json").read_text())["kernels"]}
    assert facts[down["name"]]["ptx_mma"] > 0 and down["local_ops"] == 0
    # no other kernel streams: its input fits, or it is a norm
    assert all(s.get("a_stream", 0) == 0 for k in ks[:-1] for s in k["stages"])
    x16 = np.random.default_rng(3).standard_normal((rows, 128)).astype(np.float16)
    ref, bound = reference(model, x16, mixed=True)
    y = Model(pkg).run(x16)
    assert np.isfinite(y).all() and _worst(y, ref, bound) <= 1.0, _worst(y, ref, bound)


def test_a_norm_after_a_matmul_keeps_its_kernel_at_many_rows(tmp_path):
    """At 5,000 rows (more 16-row tiles than SMs) the post-LN norm stays in the down
    projection's kernel, which then keeps whole rows."""
    pytest.importorskip("cutlass")
    _, pkg = _compile("bert_ffn", tmp_path, 5000)
    ks = json.loads((pkg / "plan.json").read_text())["kernels"]
    assert [[s["op"] for s in k["stages"]] for k in ks] == [["linear"], ["linear", "norm"]]
    assert ks[1]["segment"]["slices"] == 1 and ks[1]["segment"]["split_stage"] == -1


def test_auto_takes_the_gemms_where_chain_mma_does_not_fit(tmp_path):
    """The LLaMA-width FFN at 1,000 rows: no block holds a row tile's 5,632-wide hidden
    beside X, and the streaming kernel would stream all weights again per row tile; on
    Hopper auto takes the conventional schedule with its linears as GEMMs, the norm in a
    kernel of its own."""
    pytest.importorskip("cutlass")
    module, ex = blocks.make("llama_ffn", small=False, rows=16)
    model = export(module, ex, 16, str(tmp_path / "llama.onnx"))
    out = tmp_path / "pkg"
    p = rowfuse("compile", model, "--rows", 1000, "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["schedule"] == "conventional-wgmma", plan["schedule_reason"]
    assert "does not fit" in plan["schedule_reason"]
    assert [[s["op"] for s in k["stages"]] for k in plan["kernels"]] == [
        ["norm"],
        ["gated"],
        ["linear"],
    ]
    assert [k["mode"] for k in plan["kernels"]] == ["chain_mma", "chain_wgmma", "chain_wgmma"]
    # at 4 rows the streaming kernel stays the choice
    p = rowfuse("compile", model, "--rows", 4, "-o", tmp_path / "pkg4")
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads((tmp_path / "pkg4" / "plan.json").read_text())["schedule"] == "chain_stream"


def test_auto_weighs_the_gemms_against_chain_mma_above_the_decode_rows(tmp_path):
    """Above the decode rows auto weighs chain_mma, which streams every weight again for
    each row tile, against the linears as Hopper GEMMs by their cost lines (the reason
    states both): the GPT-2 FFN (9.4 MB of weights) takes the GEMMs at 1,000 rows, where
    the whole-chain kernel's line is several times theirs (measured: ten times); a chain
    whose weights stay resident
    in the whole-chain kernel keeps it; at 64 rows the decode schedules decide as before."""
    pytest.importorskip("cutlass")
    module, ex = blocks.make("gpt2_ffn", small=False, rows=16)
    model = export(module, ex, 16, str(tmp_path / "gpt2.onnx"))
    p = rowfuse("compile", model, "--rows", 1000, "-o", tmp_path / "g1000")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((tmp_path / "g1000" / "plan.json").read_text())
    assert plan["schedule"] == "conventional-wgmma", plan["schedule_reason"]
    m = re.search(r"cost lines (\d+) us as GEMMs, (\d+) us as chain_mma", plan["schedule_reason"])
    assert m and 5 * int(m[1]) < int(m[2]), plan["schedule_reason"]
    p = rowfuse("compile", model, "--rows", 64, "-o", tmp_path / "g64")
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads((tmp_path / "g64" / "plan.json").read_text())["schedule"] != (
        "conventional-wgmma"
    )
    module, ex = blocks.make("tcnn_mlp", small=False, rows=16)
    model = export(module, ex, 16, str(tmp_path / "tcnn.onnx"))
    p = rowfuse("compile", model, "--rows", 16384, "-o", tmp_path / "t")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((tmp_path / "t" / "plan.json").read_text())
    assert plan["schedule"] == "chain" and plan["kernels"][0]["weight_buffers"] == 0
    # the stacked MLPs (262 KB of weights, four linears) at 1,000 rows: four GEMM kernels'
    # fixed costs outweigh the whole-chain kernel streaming its weights per 16-row tile, and
    # with a block per row tile its ring is 8 deep, running ahead across the stages
    module, ex = blocks.make("stacked", small=False, rows=16)
    model = export(module, ex, 16, str(tmp_path / "stacked.onnx"))
    p = rowfuse("compile", model, "--rows", 1000, "-o", tmp_path / "s")
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((tmp_path / "s" / "plan.json").read_text())
    k = json.loads((tmp_path / "s" / "kernel_spec.json").read_text())["kernels"][0]
    assert plan["schedule"] == "chain", plan["schedule_reason"]
    assert k["weight_buffers"] == 8 and k["ring_ahead"] == 1
    # ... and at 16,384 rows (more row tiles than SMs) it keeps two buffers
    p = rowfuse("compile", model, "--rows", 16384, "--schedule", "chain", "-o", tmp_path / "s2")
    assert p.returncode == 0, p.stdout + p.stderr
    k = json.loads((tmp_path / "s2" / "kernel_spec.json").read_text())["kernels"][0]
    assert k["weight_buffers"] == 2 and "ring_ahead" not in k


def test_conventional_refuses_other_planted_faults(tmp_path):
    module, ex = blocks.make("gpt2_ffn", small=True, rows=8)
    model = export(module, ex, 8, str(tmp_path / "g.onnx"))
    args = ["--schedule", "conventional", "--plant-fault", "stream-no-fence"]
    p = rowfuse("compile", model, *args, "-o", tmp_path / "pkg")
    assert p.returncode != 0 and "conventional" in p.stderr
    # and its own fault needs the conventional schedule
    p = rowfuse("compile", model, "--plant-fault", "conv-no-store", "-o", tmp_path / "pkg2")
    assert p.returncode != 0 and "--schedule conventional" in p.stderr


def test_planted_conv_no_store_drops_exactly_the_scratch_stores(tmp_path):
    """--plant-fault conv-no-store (tests of the checks only): every kernel entry carries it
    and the kernels that hand a value to a later one lose their global stores of it (the
    GPU check must then fail: tests/gpu chains), the last kernel's stores of Y stay."""
    pytest.importorskip("cutlass")
    import re

    model, good = _compile("gpt2_ffn", tmp_path, 8)
    bad = tmp_path / "bad"
    args = ["--rows", 8, "--schedule", "conventional", "--plant-fault", "conv-no-store"]
    p = rowfuse("compile", model, *args, "-o", bad)
    assert p.returncode == 0, p.stdout + p.stderr
    ks = json.loads((bad / "plan.json").read_text())["kernels"]
    assert all(k.get("fault") == "conv_no_store" for k in ks)

    def stores(pkg, i):
        ptx = next((pkg / "kernels").glob(f"*_{i}.ptx")).read_text()
        return len(re.findall(r"\bst\.global\.", ptx))

    assert stores(good, 0) > 0 and stores(bad, 0) == 0
    assert stores(bad, 1) == stores(good, 1) > 0


def _load_error(pkg) -> str:
    """rf_chain_pkg_load's message for the package ('' when it loads: a GPU is there)."""
    import ctypes

    from rowfuse import torch as rtorch

    lib = rtorch._lib()
    h = ctypes.c_void_p()
    st = lib.rf_chain_pkg_load(lib.rf_allocator_system(), str(pkg).encode(), ctypes.byref(h))
    if not st:
        lib.rf_chain_pkg_destroy(h)
        return ""
    msg = lib.rf_status_message(st).decode(errors="replace")
    lib.rf_status_free(st)
    return msg


def test_runtime_reads_the_kernels_in_order(tmp_path):
    """The runtime reads every kernel of the plan and checks each against the library's
    names before it needs a device; kernels out of launch order or a renamed one are refused
    naming the field."""
    pytest.importorskip("cutlass")
    _, pkg = _compile("gpt2_ffn", tmp_path, 8)
    ok = _load_error(pkg)
    assert ok == "" or "device" in ok.lower() or "cuda" in ok.lower(), ok
    plan_path = pkg / "plan.json"
    good = plan_path.read_text()
    plan = json.loads(good)
    plan["kernels"] = plan["kernels"][::-1]
    plan_path.write_text(json.dumps(plan))
    assert "launch order" in _load_error(pkg)
    plan = json.loads(good)
    plan["kernels"][1]["name"] += "x"
    plan_path.write_text(json.dumps(plan))
    msg = _load_error(pkg)
    assert "kernel 1 of library" in msg and "plan.json says" in msg, msg
    plan = json.loads(good)
    plan["kernels"][1]["segment"]["count"] = 3
    plan_path.write_text(json.dumps(plan))
    assert "count" in _load_error(pkg)


def test_the_generator_refuses_an_inconsistent_segment(tmp_path):
    """A conventional kernel's entry that breaks a rule the generator relies on is refused
    naming it: an input missing, scratch columns not 16-byte aligned, slices that do not
    cover the matmul, a value produced and neither read nor stored."""
    pytest.importorskip("cutlass")
    from rowfuse.kernels import chain_mma as cm

    _, pkg = _compile("gpt2_ffn", tmp_path, 8)
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    pad = spec["smem_row_pad"]
    k1 = spec["kernels"][1]
    cm.ChainPlan.from_spec(k1, pad)  # as written: accepted

    def refused(mutate, needle):
        k = json.loads(json.dumps(k1))
        mutate(k)
        with pytest.raises(cm.SpecError, match=needle):
            cm.ChainPlan.from_spec(k, pad)

    refused(lambda k: k["segment"]["inputs"].clear(), "inputs")
    aux = next(v for v in k1["values"] if v["global"] == "aux")

    def shift(k):
        next(v for v in k["values"] if v["id"] == aux["id"])["aux_col"] += 4

    refused(shift, "aux_col")
    refused(lambda k: k["segment"].update(slices=1, slice_chunks=1), "do not cover")

    def y_elsewhere(k):
        next(v for v in k["values"] if v["global"] == "y")["global"] = "none"

    refused(y_elsewhere, "global")
    k0 = spec["kernels"][0]
    cm.ChainPlan.from_spec(k0, pad)
    k0["values"][aux["id"]].update({"global": "none"})
    k0["values"][aux["id"]].pop("aux_col")
    with pytest.raises(cm.SpecError, match="neither read nor stored"):
        cm.ChainPlan.from_spec(k0, pad)
