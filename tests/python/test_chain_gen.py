"""The chain_mma kernel generator (python/rowfuse/kernels/chain_mma.py) without a GPU.

Hand-written kernel specifications of the block kinds a chain must cover (the residual MLP
as a chain, a pre-LN GELU FFN, a SwiGLU FFN with RMSNorm, a 4-layer no-bias MLP with a
narrow output, a classifier head with N = 1, and one chain with every stage kind on other
tile geometry) go through `python -m rowfuse.kernels.build`, the path `rowfuse compile`
takes: each kernel must compile to sm_90a PTX holding exactly the tensor-core mma.sync and
block barriers its stages imply (counted here from the spec, independently of the
generator), without spills, and link into a library that exports the chain entry of the
kernel ABI. Inconsistent specifications are refused naming the field. The layouts below
are the test's own (values one after another in shared memory, the weight ring after
them), not the planner's; the generator only reads them. The CuTe DSL is a dependency:
its absence fails these tests, never skips them.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys

import cutlass  # noqa: F401  (a missing DSL is an error here, not a skip)
import pytest
from cli_util import ROOT, env
from rowfuse.capi import names
from rowfuse.kernels import chain_mma as cm

PAD = 8  # fp16 elements added to every ring row (kernel_spec.json "smem_row_pad")


def _up(a: int, b: int) -> int:
    return (a + b - 1) // b * b


def make_spec(name, c, stages, tile_rows=16, warps=4, nchunk=64, nbuf=2, y_slot=False):
    """A chain_mma kernel entry for X [M, c] through `stages` (op plus the model's fields:
    linear n / bias / epilogue, gated n / fn / bias, act fn, add a / b, norm kind /
    affine). Values are fp16 when a matmul reads them (and X), fp32 otherwise."""
    widths, srcs = [c], []
    for i, s in enumerate(stages):
        src = s.get("src", i)
        srcs.append(src)
        op = s["op"]
        widths.append(s["n"] if op in ("linear", "gated") else widths[s.get("a", src)])
    mm_in = {srcs[i] for i, s in enumerate(stages) if s["op"] in ("linear", "gated")}
    values, off = [], 0
    for v, w in enumerate(widths):
        last = v == len(widths) - 1
        dt = "f16" if (v == 0 or v in mm_in) and not last else "f32"
        eb = 2 if dt == "f16" else 4
        pw = _up(w, 16)
        rs = pw + 16 // eb
        so = -1
        if not last or y_slot:
            so, off = off, _up(off + tile_rows * rs * eb, 128)
        values.append(
            {
                "id": v,
                "width": w,
                "dtype": dt,
                "padded_width": pw,
                "smem_offset": so,
                "row_stride": rs,
            }
        )
    wh = wf = ring = 0
    out = []
    for i, s in enumerate(stages):
        src, dst, op = srcs[i], i + 1, s["op"]
        if op in ("linear", "gated"):
            k, n = widths[src], widths[dst]
            kp = values[src]["padded_width"]
            kc = next(x for x in (64, 32, 16) if kp % x == 0)
            nc = min(nchunk, values[dst]["padded_width"])
            e = {"op": op, "src": src, "dst": dst, "k": k, "n": n, "k_pad": kp}
            e.update(n_pad=_up(values[dst]["padded_width"], nc), k_chunk=kc, n_chunk=nc)
            mats = 1 if op == "linear" else 2
            keys = ("w",) if op == "linear" else ("wg", "wu")
            for key in keys:
                e[key], wh = wh, _up(wh + k * n, 8)
            for key in ("b",) if op == "linear" else ("bg", "bu"):
                e[key] = -1
                if s.get("bias", op == "linear"):
                    e[key], wf = wf, _up(wf + n, 8)
            if op == "linear":
                e["epilogue"] = s.get("epilogue", [])
            else:
                e["fn"] = s["fn"]
            ring = max(ring, mats * kc * (nc + PAD) * 2)
        elif op == "act":
            e = {"op": op, "src": src, "dst": dst, "fn": s["fn"]}
        elif op == "add":
            e = {"op": op, "a": s["a"], "b": s["b"], "dst": dst}
        else:
            w = widths[src]
            e = {"op": op, "kind": s["kind"], "src": src, "dst": dst, "eps": 1e-5, "gamma": -1}
            keys = ("gamma", "beta") if s["kind"] == "layernorm" else ("gamma",)
            for key in keys:
                e[key] = -1
                if s.get("affine", True):
                    e[key], wf = wf, _up(wf + w, 8)
        out.append(e)
    return {
        "name": name,
        "mode": "chain_mma",
        "in_width": c,
        "out_width": widths[-1],
        "tile_rows": tile_rows,
        "warps": warps,
        "threads": 32 * warps,
        "smem_bytes": off + nbuf * ring,
        "values": values,
        "stages": out,
        "weight_smem_offset": off,
        "weight_buffers": nbuf,
    }


def relu():
    return {"op": "act", "fn": "relu"}


# a pre-LN GELU FFN 64 -> 256 -> 64 with the residual (three of the chains below)
PRELN = [
    {"op": "norm", "kind": "layernorm"},
    {"op": "linear", "n": 256, "epilogue": [{"op": "act", "fn": "gelu_erf"}]},
    {"op": "linear", "n": 64, "epilogue": [{"op": "add", "src": 0}]},
]

CHAINS = [
    # the residual MLP: v1 = fp16(relu(X W1 + b1)), Y = relu(v1 W2 + b2 + X)
    make_spec(
        "chain_resmlp",
        48,
        [
            {"op": "linear", "n": 96, "epilogue": [relu()]},
            {"op": "linear", "n": 48, "epilogue": [{"op": "add", "src": 0}, relu()]},
        ],
    ),
    make_spec("chain_preln", 64, PRELN),
    # SwiGLU with RMSNorm 64 -> 176 -> 64
    make_spec(
        "chain_swiglu",
        64,
        [
            {"op": "norm", "kind": "rmsnorm"},
            {"op": "gated", "n": 176, "fn": "silu"},
            {"op": "linear", "n": 64, "bias": False, "epilogue": [{"op": "add", "src": 0}]},
        ],
    ),
    # 4-layer no-bias MLP of width 64, output 3
    make_spec(
        "chain_tcnn",
        64,
        [{"op": "linear", "n": 64, "bias": False, "epilogue": [relu()]} for _ in range(3)]
        + [{"op": "linear", "n": 3, "bias": False}],
    ),
    # a classifier head with N = 1
    make_spec(
        "chain_cls",
        40,
        [
            {"op": "linear", "n": 32, "epilogue": [{"op": "act", "fn": "tanh"}]},
            {"op": "linear", "n": 1},
            {"op": "act", "fn": "sigmoid"},
        ],
    ),
    # every stage kind and epilogue op: 64-row tiles on 4 warps, one weight buffer, Y kept
    # in shared memory, norms without affine parameters
    make_spec(
        "chain_mixed",
        40,
        [
            {"op": "linear", "n": 72, "epilogue": [{"op": "act", "fn": "gelu_tanh"}]},
            {"op": "linear", "n": 72, "epilogue": [{"op": "mul", "src": 1}]},
            {"op": "act", "fn": "silu"},
            {"op": "add", "a": 3, "b": 1},
            {"op": "norm", "kind": "layernorm", "affine": False},
            {"op": "linear", "n": 5, "epilogue": [{"op": "act", "fn": "identity"}]},
            {"op": "norm", "kind": "rmsnorm", "affine": False},
        ],
        tile_rows=64,
        nbuf=1,
        y_slot=True,
        nchunk=32,
    ),
    # the pre-LN FFN through a ring of 6 weight buffers: W1's 4 n chunks of one k chunk
    # each, then W2's 4 k chunks (unrolled)
    make_spec("chain_ring", 64, PRELN, nbuf=6),
    # the same with the ring running ahead across the stages (its first tiles beside X)
    dict(make_spec("chain_ring_ahead", 64, PRELN, nbuf=6), ring_ahead=1),
    # a gated stage of 5 k chunks (a loop, beyond UNROLL_K) through a ring of 5 buffers
    make_spec(
        "chain_ring_loop",
        320,
        [
            {"op": "gated", "n": 128, "fn": "silu"},
            {"op": "linear", "n": 320, "bias": False, "epilogue": [{"op": "add", "src": 0}]},
        ],
        nbuf=5,
    ),
]


def expected_counts(k: dict) -> tuple[int, int]:
    """(mma.sync, bar.sync) the kernel's PTX must hold, from the spec alone. Per matmul
    stage the k chunks are unrolled up to chain_mma.UNROLL_K (k_chunk / 16 k-blocks each;
    more k chunks are a loop, its body once in the code) and the n chunks are a loop. Each
    warp holds tile_rows / (16 warps_m) x n_chunk / (8 warps_n') m16n8 tiles (warps_m: the
    largest divisor of tile_rows / 16 not above warps; warps_n': the largest count not above
    warps / warps_m that divides n_chunk / 16). Where a stage has one n chunk on one warp
    column and unrolled k chunks, the m16n8 tiles whose 8 columns all lie at or past n are
    never stored, and the compiler drops their mma (a head of N = 1 keeps one of its two).
    Barriers: one after X is staged, two per k chunk of a matmul in the code (operands
    landed; buffer free) with one or two weight buffers, one per k chunk in the code and one
    closing the stage with a deeper ring, one after every other stage, one after Y leaves
    shared memory."""
    tm, warps = k["tile_rows"], k["warps"]
    wm = max(d for d in range(1, tm // 16 + 1) if (tm // 16) % d == 0 and d <= warps)
    mma, bar = 0, 1
    for s in k["stages"]:
        if s["op"] in ("linear", "gated"):
            nk = s["k_pad"] // s["k_chunk"]
            unrolled = nk <= cm.UNROLL_K
            nk = nk if unrolled else 1
            q = s["n_chunk"] // 16
            wn = max(w for w in range(1, warps // wm + 1) if q % w == 0)
            atoms = s["n_chunk"] // (8 * wn)
            if wn == 1 and s["n_pad"] == s["n_chunk"] and unrolled:
                atoms = sum(1 for j in range(atoms) if 8 * j < s["n"])
            per_k = (s["k_chunk"] // 16) * (tm // (16 * wm)) * atoms
            mma += (2 if s["op"] == "gated" else 1) * nk * per_k
            bar += 2 * nk if k["weight_buffers"] <= 2 else nk + 1
        else:
            bar += 1
    if k["values"][-1]["smem_offset"] >= 0:
        bar += 1
    return mma, bar


def _spec_file(path, kernels):
    spec = {
        "format": "rowfuse-kernel-spec",
        "version": names.PLAN_VERSION,
        "smem_row_pad": PAD,
        "target": {"name": "h200", "arch": "sm_90a", "sm_count": 132},
        "library": "librowfuse_pkg.so",
        "kernels": kernels,
    }
    path.write_text(json.dumps(spec, indent=1))
    return path


def _build(spec, out, *extra):
    return subprocess.run(
        [sys.executable, "-m", "rowfuse.kernels.build", "--spec", str(spec), "--out", str(out)]
        + list(extra),
        capture_output=True,
        text=True,
        env=env(),
        cwd=str(ROOT),
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One package holding every test chain's kernel (one generator run)."""
    tmp = tmp_path_factory.mktemp("chains")
    pkg = tmp / "pkg"
    p = _build(_spec_file(tmp / "kernel_spec.json", CHAINS), pkg)
    assert p.returncode == 0, p.stderr[-4000:]
    facts = {k["name"]: k for k in json.loads((pkg / "kernels.json").read_text())["kernels"]}
    return pkg, facts


@pytest.mark.parametrize("k", CHAINS, ids=[k["name"] for k in CHAINS])
def test_ptx_holds_the_stages_mma_and_barriers(built, k):
    pkg, facts = built
    info = facts[k["name"]]
    ptx = (pkg / info["files"]["ptx"]).read_text()
    assert ".target sm_90a" in ptx
    mma, bar = expected_counts(k)
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == mma == info["ptx_mma"]
    assert ptx.count("bar.sync") == bar == info["ptx_bar_sync"]
    assert info["ptx_ldmatrix"] >= 1 and info["registers"] and info["registers"] <= 255
    assert info.get("sass_local", 0) == 0, "the kernel spills to local memory"


@pytest.mark.parametrize("name", ["chain_ring", "chain_ring_loop", "chain_ring_ahead"])
def test_deep_ring_waits_for_its_oldest_tile(built, name):
    """A ring of B buffers keeps B - 2 cp.async groups in flight at each tile's wait (one per
    k chunk in the code), after B - 1 groups issued as each matmul stage starts, or, running
    ahead across the stages, as the row tile starts beside X (whose wait leaves them all in
    flight); the double-buffered kernels wait for all but one."""
    pkg, facts = built
    k = next(c for c in CHAINS if c["name"] == name)
    b = k["weight_buffers"]
    ptx = (pkg / facts[name]["files"]["ptx"]).read_text()
    mms = [s for s in k["stages"] if s["op"] in ("linear", "gated")]
    in_code = [min(s["k_pad"] // s["k_chunk"], cm.UNROLL_K + 1) for s in mms]
    in_code = [n if n <= cm.UNROLL_K else 1 for n in in_code]
    waits = re.findall(r"cp\.async\.wait_group\s+(\d+);", ptx)
    assert waits.count(str(b - 2)) == sum(in_code)
    if k.get("ring_ahead"):
        assert waits.count(str(b - 1)) == 1 and set(waits) == {str(b - 1), str(b - 2)}
        assert ptx.count("cp.async.commit_group") == 1 + (b - 1) + sum(in_code)
    else:
        assert set(waits) == {"0", str(b - 2)}
        assert ptx.count("cp.async.commit_group") >= len(mms) * (b - 1) + sum(in_code)
    two = (pkg / facts["chain_preln"]["files"]["ptx"]).read_text()
    assert set(re.findall(r"cp\.async\.wait_group\s+(\d+);", two)) == {"0", "1"}


def test_norms_reduce_with_warp_shuffles(built):
    pkg, facts = built
    for name, n_norms in (("chain_preln", 1), ("chain_swiglu", 1), ("chain_mixed", 2)):
        ptx = (pkg / facts[name]["files"]["ptx"]).read_text()
        # one butterfly of 5 steps per statistic (LayerNorm: mean and variance)
        assert ptx.count("shfl.sync.bfly") >= 5 * n_norms, name
    ptx = (pkg / facts["chain_resmlp"]["files"]["ptx"]).read_text()
    assert "shfl.sync.bfly" not in ptx


def test_library_exports_the_chain_entry(built):
    pkg, _ = built
    table = (pkg / "rf_pkg_table.h").read_text()
    order = " ".join(f"C({k['name']})" for k in CHAINS)
    assert f"#define RF_PKG_KERNEL_LIST(X, C) {order}" in table
    assert "#define RF_PKG_KERNELS(X) \n" in table
    nm = shutil.which("nm")
    assert nm, "nm (binutils) is needed to list the library's exports"
    out = subprocess.run(
        [nm, "-D", "--defined-only", str(pkg / "librowfuse_pkg.so")], capture_output=True, text=True
    ).stdout
    syms = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert {"rf_pkg_launch_chain", "rf_pkg_launch", "rf_pkg_init", "rf_pkg_kernel_name"} <= syms
    assert all(s.startswith("rf_pkg_") for s in syms), sorted(syms)


def _broken(edit):
    k = copy.deepcopy(CHAINS[0])
    edit(k)
    return k


def _set(path, value):
    def edit(k):
        obj = k
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return edit


BROKEN = [
    ("field 'n_chunk' missing", lambda k: k["stages"][0].pop("n_chunk")),
    ("k_pad 40 must be whole k chunks", _set(("stages", 0, "k_pad"), 40)),
    ("reads value 2, which is not produced", _set(("stages", 1, "epilogue", 0, "src"), 2)),
    ("a matmul reads fp16", _set(("values", 1, "dtype"), "f32")),
    ("padded_width 40 must be a multiple of 16", _set(("values", 0, "padded_width"), 40)),
    ("ends past smem_bytes", _set(("smem_bytes",), 4096)),
    ("unknown act fn 'gelu'", _set(("stages", 0, "epilogue", 0, "fn"), "gelu")),
    ("threads 96 is not 32 * warps", _set(("threads",), 96)),
    ("not a multiple of 8 elements", _set(("stages", 1, "w"), 4)),
    ("dst 3; stage 1 produces value 2", _set(("stages", 1, "dst"), 3)),
    ("only Y may live outside shared memory", _set(("values", 1, "smem_offset"), -1)),
    ("ring_ahead needs the whole chain's kernel, a ring of more", _set(("ring_ahead",), 1)),
]


@pytest.mark.parametrize("why,edit", BROKEN, ids=[b[0] for b in BROKEN])
def test_inconsistent_specs_are_refused(why, edit):
    cm.ChainPlan.from_spec(copy.deepcopy(CHAINS[0]), PAD)  # the unbroken one passes
    with pytest.raises(cm.SpecError, match="chain_resmlp") as e:
        cm.ChainPlan.from_spec(_broken(edit), PAD)
    assert why in str(e.value)


def test_build_refuses_a_broken_spec(tmp_path):
    spec = _spec_file(tmp_path / "kernel_spec.json", [_broken(_set(("stages", 0, "k_pad"), 40))])
    p = _build(spec, tmp_path / "pkg", "--link", "objects")
    assert p.returncode != 0
    assert "chain_resmlp: stages[0] (linear): k_pad 40" in p.stderr
