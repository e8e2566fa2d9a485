"""The commands' own edges: report on a file that is not a benchmark run, compile into a
folder of other files, run without --cpu, inspect --sass without cuobjdump, eval's
--features ranges and globs and its short rows, and the one set of option-value parsers
(each error names the flag and the text). Inputs are fresh seeded random data (seed
printed)."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import onnx.reference
import pytest
from cli_util import RF_BIN, export, rowfuse

SEED = 20261204


def _one_line(p, *needles, code=2):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return export("residual_mlp:make", 7, tmp_path_factory.mktemp("cli_cmd") / "m.onnx")


# ---- report ----


@pytest.mark.parametrize("doc", [{"rows": 3}, [1, 2], {"schema": "rowfuse-eval/1"}])
def test_report_on_a_file_that_is_not_a_bench_run(tmp_path, doc):
    run = tmp_path / "notbench.json"
    run.write_text(json.dumps(doc))
    line = _one_line(rowfuse("report", run, "-o", tmp_path / "rep"), "notbench.json")
    assert "not a benchmark run" in line and "internal error" not in line, line
    assert not (tmp_path / "rep").exists()


# ---- compile -o ----


def test_compile_refuses_a_folder_of_other_files(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    line = _one_line(rowfuse("compile", "--mlp", "49x48x96", "-o", out), str(out))
    assert "not empty" in line and "--force" in line, line
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("kind", ["force", "package", "empty"])
def test_compile_output_folders_it_takes(tmp_path, kind):
    """--force, an existing package (replaced) and an empty folder pass the folder check:
    the error is then the missing model's, later in the same run."""
    out = tmp_path / "out"
    out.mkdir()
    extra = []
    if kind == "force":
        (out / "notes.txt").write_text("x\n")
        extra = ["--force"]
    elif kind == "package":
        (out / "plan.json").write_text("{}\n")
        (out / "weights.bin").write_bytes(b"\0" * 64)
    line = _one_line(rowfuse("compile", tmp_path / "missing.onnx", "-o", out, *extra))
    assert "missing.onnx" in line and "not empty" not in line, line


# ---- run ----


def test_run_needs_no_cpu_flag(tmp_path, model):
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    x = rng.standard_normal((7, 48)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = rowfuse("run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    got = np.load(tmp_path / "y.npy")
    sess = onnx.reference.ReferenceEvaluator(onnx.load(str(model)))
    (want,) = sess.run(None, {sess.input_names[0]: x})
    assert got.shape == want.shape and np.abs(got).max() > 0
    np.testing.assert_allclose(got, want.astype(np.float64), rtol=1e-5, atol=1e-5)
    # --cpu, once required, is still accepted and changes nothing
    q = rowfuse(
        "run", model, "--input", tmp_path / "x.npy", "--output", tmp_path / "y2.npy", "--cpu"
    )
    assert q.returncode == 0, q.stderr
    assert np.array_equal(np.load(tmp_path / "y2.npy"), got)


# ---- inspect --sass ----


def _inspect_sass(pkg, tmp_path):
    """rowfuse inspect --sass with a PATH that holds no cuobjdump."""
    empty = tmp_path / "nobin"
    empty.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=str(empty))
    return subprocess.run(
        [RF_BIN, "inspect", str(pkg), "--sass"], capture_output=True, text=True, env=env
    )


def test_inspect_sass_reads_the_package_files(tmp_path):
    rng = np.random.default_rng(SEED)
    pkg = tmp_path / "pkg"
    (pkg / "kernels").mkdir(parents=True)
    text = "".join(
        f"  /*{i:04x}*/ HGMMA.64x{int(v)}x16.F32 R{i}, gdesc ;\n"
        for i, v in enumerate(rng.integers(8, 256, 12))
    )
    (pkg / "kernels" / "k0.sass").write_text(text)
    (pkg / "kernels" / "k0.cubin").write_bytes(rng.integers(0, 256, 512, np.uint8).tobytes())
    p = _inspect_sass(pkg, tmp_path)
    assert p.returncode == 0, p.stderr
    assert text in p.stdout and "kernels/k0.sass" in p.stdout


def test_inspect_sass_without_sass_or_cuobjdump(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "kernels" / "k0.cubin").write_bytes(b"\x7fELF" + bytes(60))
    line = _one_line(_inspect_sass(pkg, tmp_path), "no .sass", "cuobjdump", "k0.cubin")
    assert "not on PATH" in line, line
    assert not (pkg / "kernels" / "k0.cubin.sass").exists()
    (pkg / "kernels" / "k0.cubin").unlink()
    _one_line(_inspect_sass(pkg, tmp_path), "no .sass and no .cubin")


# ---- eval --features ----


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return export("eval_models:classifier", 8, tmp_path_factory.mktemp("cli_eval") / "c.onnx")


def _csv(path, n=40, short_row=None):
    rng = np.random.default_rng(SEED)
    rows = [
        [f"{v:.6f}" for v in rng.standard_normal(4)] + [str(i % 3), "ab"[i % 2]] for i in range(n)
    ]
    if short_row is not None:
        del rows[short_row][3]  # one value missing: the rest shift left by a column
    path.write_text("f0,f1,f2,f3,label,group\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def _eval(model, data, out, features, *extra):
    return rowfuse(
        "eval",
        "--model",
        model,
        "--data",
        data,
        "--features",
        features,
        "--label",
        "label",
        *extra,
        "--no-plot",
        "-o",
        out,
    )


def test_eval_features_ranges_globs_and_spaces(tmp_path, classifier):
    data = _csv(tmp_path / "d.csv")
    ref = tmp_path / "plain"
    assert _eval(classifier, data, ref, "f0,f1,f2,f3").returncode == 0
    want = np.load(ref / "outputs_reference.npy")
    for i, spec in enumerate(["f0..f3", "f0..3", "f*", "f0, f1 ,f2,  f3", "f0,f1..f2,f[3]"]):
        out = tmp_path / f"o{i}"
        p = _eval(classifier, data, out, spec, "--slice", "group")
        assert p.returncode == 0, (spec, p.stderr)
        doc = json.loads((out / "eval.json").read_text())
        assert doc["features"] == ["f0", "f1", "f2", "f3"], (spec, doc["features"])
        assert np.array_equal(np.load(out / "outputs_reference.npy"), want), spec


@pytest.mark.parametrize(
    "spec,needles",
    [
        ("z*", ["no feature column matches 'z*'", "'f0'"]),
        ("f3..f0", ["'f3..f0' is not a range"]),
        ("f0..g3", ["'f0..g3' is not a range"]),
        ("f0,,f1", ["an empty name"]),
        ("f*,f1", ["column 'f1' is picked twice"]),
    ],
)
def test_eval_features_errors(tmp_path, classifier, spec, needles):
    _one_line(_eval(classifier, _csv(tmp_path / "d.csv"), tmp_path / "o", spec), *needles)


def test_eval_short_row_is_a_short_row(tmp_path, classifier):
    data = _csv(tmp_path / "short.csv", short_row=2)
    _one_line(
        _eval(classifier, data, tmp_path / "o", "f0..f3"),
        "short.csv",
        "row 3 has 5 fields",
        "header has 6",
        "short row",
    )


# ---- option values: one parser each, errors naming the flag and the text ----


@pytest.mark.parametrize(
    "args,flag,text",
    [
        (["schedule", "--rows", "12x", "--channels", "48", "--hidden", "96"], "--rows", "12x"),
        (["schedule", "--rows", "49", "--channels", "-4", "--hidden", "96"], "--channels", "-4"),
        (["check", "pkg", "--replays", "5x"], "--replays", "5x"),
        (["check", "pkg", "--seed", "seven"], "--seed", "seven"),
        (["bench", "pkg", "--c", "--obs", "0"], "--obs", "0"),
        (["bench", "pkg", "--c", "--tol", "nan"], "--tol", "nan"),
        (["iree", "--mlp", "49x48x96", "--seed", "1.5", "-o", "OUT"], "--seed", "1.5"),
        (["iree", "--mlp", "49x48x96", "--sms", "lots", "-o", "OUT"], "--sms", "lots"),
        (["compile", "--mlp", "49x48x96", "--sms", "0", "-o", "OUT"], "--sms", "0"),
        (["compile", "--mlp", "49x48x96", "--tile-rows", "48", "-o", "OUT"], "--tile-rows", "48"),
        (["compile", "--mlp", "49x0x96", "-o", "OUT"], "--mlp", "49x0x96"),
        (["compile", "--mlp", "49x48x96x2", "-o", "OUT"], "--mlp", "49x48x96x2"),
        (
            ["run", "M", "--input", "x", "--output", "y", "--precision", "fp32"],
            "--precision",
            "fp32",
        ),
    ],
)
def test_option_values(tmp_path, model, args, flag, text):
    args = [str(tmp_path / "o") if a == "OUT" else model if a == "M" else a for a in args]
    line = _one_line(rowfuse(*args))
    assert flag in line and f"'{text}'" in line, line


@pytest.mark.parametrize(
    "extra,flag,text",
    [
        (["--alpha", "1.5"], "--alpha", "1.5"),
        (["--min-count", "0"], "--min-count", "0"),
        (["--task", "rank"], "--task", "rank"),
    ],
)
def test_eval_option_values(tmp_path, classifier, extra, flag, text):
    p = _eval(classifier, tmp_path / "d.csv", tmp_path / "o", "f0..f3", *extra)
    line = _one_line(p)
    assert flag in line and f"'{text}'" in line, line
