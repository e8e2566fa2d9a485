"""Bad input through the CLI: each case gets a clear one-line error and a non-zero exit,
never a crash (a signal shows up as a negative return code)."""

from __future__ import annotations

import numpy as np
import pytest
from cli_util import export, rowfuse


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    return export("residual_mlp:make", 7, d / "m.onnx")


def _one_line_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_unreadable_model(tmp_path):
    _one_line_error(rowfuse("verify", tmp_path / "nope.onnx"), "nope.onnx")


def test_garbage_model(tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(np.random.default_rng(2212).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    p = rowfuse("verify", bad)
    assert p.returncode == 2 and "garbage.onnx" in p.stderr, p.stderr


def test_truncated_model(tmp_path, model):
    data = model.read_bytes()
    bad = tmp_path / "trunc.onnx"
    bad.write_bytes(data[: len(data) // 2])
    p = rowfuse("verify", bad)
    assert p.returncode == 2 and "trunc.onnx" in p.stderr, p.stderr


def test_input_wrong_shape(tmp_path, model):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(2212).standard_normal((7, 47)).astype(np.float32))
    p = rowfuse("run", model, "--input", x, "--output", tmp_path / "y.npy", "--cpu")
    assert p.returncode != 0 and p.returncode > 0
    assert "[7, 47]" in p.stderr and "[7, 48]" in p.stderr, p.stderr


def test_input_wrong_dtype(tmp_path, model):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(2212).integers(1, 9, (7, 48)).astype(np.int32))
    p = rowfuse("run", model, "--input", x, "--output", tmp_path / "y.npy", "--cpu")
    assert p.returncode == 2 and "i32" in p.stderr, p.stderr


def test_input_big_endian(tmp_path, model):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(2212).standard_normal((7, 48)).astype(">f4"))
    p = rowfuse("run", model, "--input", x, "--output", tmp_path / "y.npy", "--cpu")
    assert p.returncode == 2 and "x.npy" in p.stderr, p.stderr


def test_input_not_npy(tmp_path, model):
    x = tmp_path / "x.npy"
    x.write_bytes(b"\x93NUMPY\x01\x00garbage")
    p = rowfuse("run", model, "--input", x, "--output", tmp_path / "y.npy", "--cpu")
    assert p.returncode == 2 and "x.npy" in p.stderr, p.stderr


def test_output_unwritable(tmp_path, model):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(2212).standard_normal((7, 48)).astype(np.float32))
    p = rowfuse("run", model, "--input", x, "--output", tmp_path / "no" / "dir" / "y.npy", "--cpu")
    assert p.returncode == 2 and "y.npy" in p.stderr, p.stderr


def test_usage_errors():
    assert rowfuse().returncode == 2
    assert rowfuse("frobnicate").returncode == 2
    assert rowfuse("verify").returncode == 2
    assert rowfuse("run", "m.onnx").returncode == 2
    # a schedule name bench --c does not know, named with the known ones, before any GPU
    _one_line_error(
        rowfuse("bench", "pkg", "--c", "--variants", "persistent-wgmma,fastest"),
        "--variants",
        "unknown schedule 'fastest'",
        "persistent-smem",
    )


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--mlp", "49x48x96", "--schedule", "fastest"], "auto, stock or a schedule name"),
        (["--mlp", "49x48x96", "--device", "tpu"], "--device must be llvm-cpu or cuda"),
        (["--mlp", "49x48x96", "--kernels", "extern"], "use --device cuda"),
        (["--mlp", "49x48"], "--mlp wants ROWSxCHANNELSxHIDDEN"),
        (["--mlp", "49x48x96", "--function", "a b"], "--function wants a symbol name"),
        (["--mlp", "49x48x96"], "usage: rowfuse iree"),
    ],
)
def test_iree_arguments(tmp_path, args, needle):
    """`rowfuse iree` refuses bad arguments before running any tool."""
    out = [] if args == ["--mlp", "49x48x96"] else ["-o", tmp_path / "out"]
    _one_line_error(rowfuse("iree", *args, *out), needle)
