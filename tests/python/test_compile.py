"""`rowfuse compile` of the example on a machine without a GPU: the package must hold a
valid plan.json, the fp16 weights (checked against the PyTorch module), every kernel of
every schedule, and PTX with tensor-core mma instructions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_util import ROOT, export, rowfuse

try:
    import cutlass  # noqa: F401

    HAVE_DSL = True
except Exception:  # pragma: no cover - depends on the machine
    HAVE_DSL = False


@pytest.mark.skipif(not HAVE_DSL, reason="CuTe DSL (nvidia-cutlass-dsl) is not installed")
def test_compile_example(tmp_path):
    import torch

    model = export("residual_mlp:make", 49, tmp_path / "m.onnx")
    pkg = tmp_path / "pkg"
    p = rowfuse(
        "compile",
        model,
        "--rows",
        49,
        "--schedule",
        "persistent-smem",
        "--tile-rows",
        16,
        "-o",
        pkg,
    )
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    assert (plan["channels"], plan["hidden"], plan["rows"]) == (48, 96, 49)
    assert plan["schedule"] == "persistent-smem"

    import sys

    sys.path.insert(0, str(ROOT / "examples"))
    import residual_mlp

    m = residual_mlp.make()
    w1 = np.load(pkg / plan["weights"]["w1"])
    w2 = np.load(pkg / plan["weights"]["w2"])
    assert w1.dtype == np.float16 and w1.shape == (48, 96)
    assert w2.dtype == np.float16 and w2.shape == (96, 48)
    want1 = m.fc1.weight.detach().t().to(torch.float16).numpy()
    want2 = m.fc2.weight.detach().t().to(torch.float16).numpy()
    assert np.array_equal(w1, want1) and np.array_equal(w2, want2)
    b1 = np.load(pkg / plan["weights"]["b1"])
    assert b1.dtype == np.float32 and np.array_equal(b1, m.fc1.bias.detach().numpy())

    kernels = json.loads((pkg / plan["kernels"]).read_text())
    text = json.dumps(kernels)
    for sched in ("persistent-smem", "persistent-gmem", "conventional"):
        assert sched in text, f"{sched} missing from kernels.json"
    ptx = list(pkg.rglob("*.ptx"))
    assert ptx, "no PTX in the package"
    for f in ptx:
        assert "mma.sync" in f.read_text() or "wgmma" in f.read_text(), f"{f.name}: no mma"
    listing = rowfuse("inspect", pkg, check=0).stdout
    assert "plan.json" in listing and ".ptx" in listing


def test_compile_rejects_other_graphs(tmp_path):
    """A row-owned graph that is not the residual MLP compiles to a clear UNSUPPORTED."""
    from models import ROWS

    model = export("models:gelu_mlp", ROWS, tmp_path / "g.onnx")
    p = rowfuse("compile", model, "--rows", ROWS, "-o", tmp_path / "pkg")
    assert p.returncode == 1, p.stderr
    assert "residual MLP" in p.stderr


def test_compile_bad_options(tmp_path):
    model = export("residual_mlp:make", 7, tmp_path / "m.onnx")
    p = rowfuse("compile", model, "--rows", 7, "--schedule", "warp-magic", "-o", tmp_path / "p")
    assert p.returncode == 2 and "warp-magic" in p.stderr
    p = rowfuse("compile", model, "--rows", 7, "--tile-rows", 12, "-o", tmp_path / "p")
    assert p.returncode == 2 and "tile-rows" in p.stderr


@pytest.mark.skipif(not HAVE_DSL, reason="CuTe DSL (nvidia-cutlass-dsl) is not installed")
def test_compile_auto_schedule_and_tiles(tmp_path):
    """--schedule auto and --tile-rows auto (the defaults): the plan records the scheduler's
    choice with its reason, and the tile rows the generator built that schedule with; at
    8000 rows the generator's rule picks 64-row tiles (one tile per SM from 7553 rows)."""
    model = export("residual_mlp:make", 49, tmp_path / "m.onnx")
    pkg = tmp_path / "pkg"
    p = rowfuse("compile", model, "--rows", 8000, "-o", pkg)
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    kernels = json.loads((pkg / "kernels.json").read_text())
    assert plan["schedule"] == "persistent-smem" and plan["schedule_reason"]
    assert plan["tile_rows"] == kernels["schedules"]["persistent-smem"]["tile_rows"] == 64
    assert plan["tile_rows_chosen_by"] == "auto"


@pytest.mark.skipif(not HAVE_DSL, reason="CuTe DSL (nvidia-cutlass-dsl) is not installed")
def test_compile_vendor_schedule(tmp_path):
    """A plan may run cuBLASLt: the package still holds every rowfuse kernel (the runtime
    and the bench use them), and the plan records the megakernel's tile rows."""
    model = export("residual_mlp:make", 49, tmp_path / "m.onnx")
    pkg = tmp_path / "pkg"
    p = rowfuse("compile", model, "--rows", 49, "--schedule", "cublaslt", "-o", pkg)
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    kernels = json.loads((pkg / "kernels.json").read_text())
    assert plan["schedule"] == "cublaslt" and plan["schedule_reason"] == "chosen with --schedule"
    assert plan["tile_rows"] == kernels["schedules"]["persistent-smem"]["tile_rows"]
    assert set(kernels["schedules"]) >= {"persistent-smem", "persistent-gmem", "conventional"}
