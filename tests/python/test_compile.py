"""`rowfuse compile` on a machine without a GPU, the one path to a package: from a model
and from a synthetic --mlp shape. The plan must record every decision made in C (schedule
and why, tile rows, grid rule, target), the weights must be the model's (at the offsets the
plan records, hashed as the plan says), the library must export the kernel ABI and hold
the plan's kernels in the plan's order, the PTX must hold tensor-core mma for sm_90a, and
the generator must refuse a specification it was not written for. The CuTe DSL is a
dependency (scripts/setup.sh installs it): its absence fails these tests, never skips them.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys

import cutlass  # noqa: F401  (a missing DSL is an error here, not a skip)
import numpy as np
import pytest
from cli_util import ROOT, export, rowfuse
from rowfuse.capi import clib, names

ABI = {
    "rf_pkg_abi_version",
    "rf_pkg_channels",
    "rf_pkg_hidden",
    "rf_pkg_kernel_count",
    "rf_pkg_kernel_name",
    "rf_pkg_init",
    "rf_pkg_launch",
}


def _weights(pkg, plan):
    """The four weights from weights.bin at the plan's offsets (a test may read the plan)."""
    raw = (pkg / plan["weights"]["file"]).read_bytes()
    out = {}
    for name in ("w1", "b1", "w2", "b2"):
        w = plan["weights"][name]
        dt = np.float16 if w["dtype"] == "f16" else np.float32
        arr = np.frombuffer(raw[w["offset"] : w["offset"] + w["bytes"]], dtype=dt)
        out[name] = arr.reshape(w["shape"])
    return out


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("example")
    model = export("residual_mlp:make", 49, tmp / "m.onnx")
    pkg = tmp / "pkg"
    p = rowfuse("compile", model, "--rows", 49, "-o", pkg)
    assert p.returncode == 0, p.stderr
    return pkg, json.loads((pkg / "plan.json").read_text()), p.stdout


def test_plan_records_every_decision(example):
    pkg, plan, out = example
    assert plan["format"] == "rowfuse-package" and plan["version"] == names.PLAN_VERSION
    assert (plan["rows"], plan["channels"], plan["hidden"]) == (49, 48, 96)
    assert plan["schedule"] in names.SCHEDULES and plan["schedule_reason"].startswith("auto")
    assert plan["target"]["name"] == "h200" and plan["target"]["sm_count"] == 132
    assert set(plan["schedules"]) == set(names.SCHEDULES)
    for s in names.PACKAGE_SCHEDULES:
        ks = [plan["kernels"][i] for i in plan["schedules"][s]["kernels"]]
        assert plan["schedules"][s]["available"] and ks, s
        tile = 64 if s == "persistent-wgmma" else 16  # wgmma tiles are 64 rows per warpgroup
        for k in ks:
            assert k["tile_rows"] == tile and k["blocks_per_sm"] >= 1 and k["registers"] > 0
            # a block pair per tile (persistent-wgmma at few tiles) says so in the name
            suffix = f"_t{tile}" + ("_pair" if k["cluster_h"] == 2 else "")
            assert k["name"].endswith(suffix) and k["mode"] in names.KERNEL_MODES
            assert k["cluster_h"] == (2 if s == "persistent-wgmma" else 1), k["name"]
    assert plan["kernels"][plan["schedules"]["persistent-smem"]["kernels"][0]]["grid_balanced"]
    assert "schedule persistent-smem" in out and "grid 4 at 49 rows" in out


def test_weights_are_the_models(example):
    import torch

    pkg, plan, _ = example
    sys.path.insert(0, str(ROOT / "examples"))
    import residual_mlp

    m = residual_mlp.make()
    w = _weights(pkg, plan)
    assert np.array_equal(w["w1"], m.fc1.weight.detach().t().to(torch.float16).numpy())
    assert np.array_equal(w["w2"], m.fc2.weight.detach().t().to(torch.float16).numpy())
    assert np.array_equal(w["b1"], m.fc1.bias.detach().numpy())
    assert np.array_equal(w["b2"], m.fc2.bias.detach().numpy())
    assert plan["graph_hash"] == clib.weights_hash(w["w1"], w["b1"], w["w2"], w["b2"])


def test_library_and_artifacts(example):
    pkg, plan, _ = example
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(pkg / plan["library"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    syms = set(re.findall(r"\bT (\w+)", nm))
    assert ABI <= syms and all(s.startswith("rf_pkg_") for s in syms), sorted(syms)
    facts = json.loads((pkg / "kernels.json").read_text())
    assert [k["name"] for k in facts["kernels"]] == [k["name"] for k in plan["kernels"]]
    table = (pkg / "rf_pkg_table.h").read_text()
    order = re.search(r"RF_PKG_KERNELS\(X\)(.*)", table).group(1)
    assert re.findall(r"X\((\w+)\)", order) == [k["name"] for k in plan["kernels"]]
    for k in facts["kernels"]:
        ptx = (pkg / k["files"]["ptx"]).read_text()
        mma = "wgmma.mma_async" if "fused_wgmma" in k["name"] else "mma.sync.aligned.m16n8k16"
        assert mma in ptx and ".target sm_90a" in ptx, k["name"]
        for key in ("mlir", "cubin", "object", "header"):
            assert (pkg / k["files"][key]).stat().st_size > 0, (k["name"], key)
    listing = rowfuse("inspect", pkg, check=0).stdout
    assert "plan.json" in listing and ".ptx" in listing


def test_mlp_shape_without_a_model(tmp_path):
    """--mlp RxCxH: a synthetic block with the one generator's weights for the seed;
    channels 36 and hidden 80 are not multiples of the MMA shape (padded, not rejected)."""
    pkg = tmp_path / "pkg"
    p = rowfuse("compile", "--mlp", "100x36x80", "--seed", 5, "-o", pkg)
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    assert plan["model"] == "mlp:100x36x80 seed 5" and plan["rows"] == 100
    case = clib.mlp_case(1, 36, 80, 5, reference=False)
    w = _weights(pkg, plan)
    assert np.array_equal(w["w1"], case.w1) and np.array_equal(w["b2"], case.b2)
    for k in plan["kernels"]:
        assert k["padded_channels"] == 48 and k["padded_hidden"] == 96


def test_auto_tiles_follow_the_rows(tmp_path):
    """At 8000 rows the planner picks 64-row tiles (one tile per SM from 7553 rows) and X
    prefetch for the fused kernels; --tile-rows overrides."""
    pkg = tmp_path / "pkg"
    assert rowfuse("compile", "--mlp", "8000x48x96", "-o", pkg).returncode == 0
    plan = json.loads((pkg / "plan.json").read_text())
    smem = plan["kernels"][plan["schedules"]["persistent-smem"]["kernels"][0]]
    assert smem["tile_rows"] == 64 and smem["x_prefetch"] and smem["split_w2"]
    pkg2 = tmp_path / "pkg2"
    p = rowfuse(
        "compile", "--mlp", "8000x48x96", "--tile-rows", 32, "--schedule", "cublaslt", "-o", pkg2
    )
    assert p.returncode == 0, p.stderr
    plan2 = json.loads((pkg2 / "plan.json").read_text())
    assert plan2["schedule"] == "cublaslt" and plan2["schedule_reason"] == "chosen with --schedule"
    # (--tile-rows 32 is for the mma.sync kernels; wgmma tiles are 64 or 128 rows)
    assert all(k["tile_rows"] == 32 for k in plan2["kernels"] if k["mode"] != "fused_wgmma")


def test_compile_rejects_other_graphs(tmp_path):
    """A row-owned graph with a stage rowfuse does not compile is refused, naming the stage
    and the node (blocks that are chains compile: tests/python/test_chain_compile.py)."""
    from models import ROWS

    model = export("models:feature_cumsum", ROWS, tmp_path / "g.onnx")
    p = rowfuse("compile", model, "--rows", ROWS, "-o", tmp_path / "pkg")
    assert p.returncode == 1, p.stderr
    assert "CumSum over features is row-owned but rowfuse has no kernel for it" in p.stderr
    assert "(CumSum)" in p.stderr


def test_compile_bad_options(tmp_path):
    p = rowfuse("compile", "--mlp", "7x8x8", "--schedule", "warp-magic", "-o", tmp_path / "p")
    assert p.returncode == 2 and "warp-magic" in p.stderr
    p = rowfuse("compile", "--mlp", "7x8x8", "--tile-rows", 12, "-o", tmp_path / "p")
    assert p.returncode == 2 and "--tile-rows 12" in p.stderr
    p = rowfuse("compile", "--mlp", "7x8", "-o", tmp_path / "p")
    assert p.returncode == 2 and "ROWSxCHANNELSxHIDDEN" in p.stderr
    p = rowfuse("compile", "--mlp", "7x8x8", "--target", "b200", "-o", tmp_path / "p")
    assert p.returncode == 2 and "unknown target 'b200'" in p.stderr
    p = rowfuse(
        "compile", "--mlp", "64x8192x64", "--schedule", "persistent-smem", "-o", tmp_path / "p"
    )
    assert p.returncode == 1 and "accumulators per thread" in p.stderr


def test_generator_refuses_a_foreign_spec(tmp_path, example):
    pkg, _, _ = example
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    build = [sys.executable, "-m", "rowfuse.kernels.build", "--out", str(tmp_path / "o")]
    for change, message in (
        ({"version": spec["version"] + 1}, "this generator reads"),
        ({"kernels": []}, "lists no kernels"),
        ({"kernels": [dict(spec["kernels"][0], hidden_chunk=7)]}, "disagree"),
    ):
        f = tmp_path / "spec.json"
        f.write_text(json.dumps(dict(spec, **change)))
        p = subprocess.run(build + ["--spec", str(f)], capture_output=True, text=True)
        assert p.returncode != 0 and message in p.stderr, (change, p.stderr)


def test_odd_shape_builds_compressed(tmp_path):
    """C=7, H=9: nothing a multiple of the MMA shape, odd fp16 rows (no cp.async vector
    fits): every kernel still compiles to tensor-core code; artifacts gzipped."""
    pkg = tmp_path / "pkg"
    assert rowfuse("compile", "--mlp", "5x7x9", "-o", pkg).returncode == 0
    spec = pkg / "kernel_spec.json"
    out = tmp_path / "z"
    shutil.copytree(pkg, out)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rowfuse.kernels.build",
            "--spec",
            str(spec),
            "--out",
            str(out),
            "--link",
            "objects",
            "--compress",
            "--quiet",
        ],
        check=True,
    )
    facts = json.loads((out / "kernels.json").read_text())
    assert len(facts["kernels"]) == 4
    for k in facts["kernels"]:
        ptx = gzip.open(out / k["files"]["ptx"], "rt").read()
        assert "mma.sync.aligned.m16n8k16" in ptx, k["name"]


def test_compile_block_checks_the_package_weights(example):
    """rowfuse.torch.compile_block runs the package's weights only when the package was
    compiled from this module (graph hash); a module of the same shape with other weights
    is refused before any GPU is touched, and weights='module' is the explicit way out."""
    import torch
    from rowfuse import torch as rt

    pkg, plan, _ = example
    sys.path.insert(0, str(ROOT / "examples"))
    import residual_mlp

    other = residual_mlp.make(seed=residual_mlp.SEED + 1)
    with pytest.raises(ValueError, match="compiled from other weights"):
        rt.compile_block(other, rows=49, package=str(pkg))
    # the right module passes the check and stops only at the missing GPU
    if not torch.cuda.is_available():
        with pytest.raises(rt.RowfuseError, match="GPU|device|CUDA"):
            rt.compile_block(residual_mlp.make(), rows=49, package=str(pkg))
        with pytest.raises(rt.RowfuseError, match="GPU|device|CUDA"):
            rt.compile_block(other, rows=49, package=str(pkg), weights="module")
