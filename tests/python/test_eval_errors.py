"""Bad data and bad models through `rowfuse eval`: each case is a one-line error that names
what is wrong (the file, the column, the row where there is one) and a non-zero exit, or an
explicit warning; never a silently wrong report and never a crash."""

from __future__ import annotations

import numpy as np
import pytest
from cli_util import export, rowfuse

FEATURES = "f0,f1,f2,f3"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval_models")
    return {
        name: export(f"eval_models:{name}", 8, d / f"{name}.onnx")
        for name in ("classifier", "regressor", "grid")
    }


def _rows(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [
        [f"{v:.6f}" for v in rng.standard_normal(4)] + [str(i % 3), "ab"[i % 2]] for i in range(n)
    ]


def _csv(path, rows, header="f0,f1,f2,f3,label,group"):
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def _eval(model, data, out, *extra, features=FEATURES):
    args = ["eval", "--model", model, "--data", data, "--features", features, "--label", "label"]
    return rowfuse(*args, *extra, "-o", out, "--no-plot")


def _error(p, *needles, code=2):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_good_table_runs(tmp_path, models):
    data = _csv(tmp_path / "ok.csv", _rows())
    p = _eval(models["classifier"], data, tmp_path / "out", "--slice", "group")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out" / "eval.json").is_file()


def test_missing_column(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["classifier"], data, tmp_path / "o", features="f0,f1,f2,f9")
    _error(p, "d.csv", "no column 'f9'", "'f0'")
    p = _eval(models["classifier"], data, tmp_path / "o", "--slice", "region")
    _error(p, "d.csv", "no column 'region'")


def test_duplicated_column(tmp_path, models):
    data = _csv(tmp_path / "d.csv", [r + ["1"] for r in _rows()], "f0,f1,f2,f3,label,group,f1")
    _error(_eval(models["classifier"], data, tmp_path / "o"), "d.csv", "'f1' appears twice")
    data = _csv(tmp_path / "e.csv", _rows())
    p = _eval(models["classifier"], data, tmp_path / "o", features="f0,f1,f1,f3")
    _error(p, "'f1' is listed twice")
    p = _eval(models["classifier"], data, tmp_path / "o", features="f0,f1,f2,label")
    _error(p, "'label' is both a feature and the label")
    p = _eval(models["classifier"], data, tmp_path / "o", "--slice", "group", "--slice", "group")
    _error(p, "'group' is given twice")


@pytest.mark.parametrize(
    "cell,needle",
    [
        ("abc", "'abc' is not a number"),
        ("nan", "is nan"),
        ("-inf", "is -inf"),
        ("Infinity", "is Infinity"),
        ("1e999", "overflows to infinity"),
        ("", "empty feature"),
        ("0x10", "'0x10' is not a number"),
    ],
)
def test_bad_feature(tmp_path, models, cell, needle):
    rows = _rows()
    rows[6][2] = cell  # data row 7, column f2
    data = _csv(tmp_path / "d.csv", rows)
    _error(_eval(models["classifier"], data, tmp_path / "o"), "d.csv", "column 'f2', row 7", needle)


@pytest.mark.parametrize(
    "label,needle",
    [
        ("3", "label 3 is outside the model's 3 classes (0..2)"),
        ("-1", "label -1 is outside"),
        ("1.5", "label 1.5 is not a class index"),
        ("one", "label 'one' is not a number"),
    ],
)
def test_label_outside_classes(tmp_path, models, label, needle):
    rows = _rows()
    rows[11][4] = label
    data = _csv(tmp_path / "d.csv", rows)
    _error(_eval(models["classifier"], data, tmp_path / "o"), "column 'label', row 12", needle)


def test_wrong_feature_count(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["classifier"], data, tmp_path / "o", features="f0,f1,f2")
    _error(p, "takes 4 features per row", "3 feature columns were given")


def test_empty_slice_value(tmp_path, models):
    rows = _rows()
    rows[4][5] = ""
    data = _csv(tmp_path / "d.csv", rows)
    p = _eval(models["classifier"], data, tmp_path / "o", "--slice", "group")
    _error(p, "column 'group', row 5", "empty slice value")


def test_empty_files(tmp_path, models):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    _error(_eval(models["classifier"], empty, tmp_path / "o"), "empty.csv", "empty file")
    header = _csv(tmp_path / "header.csv", [])
    _error(_eval(models["classifier"], header, tmp_path / "o"), "header.csv", "no data rows")
    npz = tmp_path / "empty.npz"
    npz.write_bytes(b"")
    _error(_eval(models["classifier"], npz, tmp_path / "o"), "empty.npz", "empty file")
    np.savez(tmp_path / "nothing.npz")
    p = _eval(models["classifier"], tmp_path / "nothing.npz", tmp_path / "o")
    _error(p, "nothing.npz", "empty archive")


def test_malformed_csv(tmp_path, models):
    rows = _rows()
    rows[2] = rows[2][:3]
    data = _csv(tmp_path / "short.csv", rows)
    _error(_eval(models["classifier"], data, tmp_path / "o"), "row 3 has 3 fields", "header has 6")
    bad = tmp_path / "quote.csv"
    bad.write_text('f0,f1,f2,f3,label,group\n1,2,3,"4"x,0,a\n')
    _error(_eval(models["classifier"], bad, tmp_path / "o"), "quote.csv", "malformed CSV")
    other = tmp_path / "data.txt"
    other.write_text("f0\n1\n")
    _error(_eval(models["classifier"], other, tmp_path / "o"), "data.txt", ".csv or .npz")


def test_model_not_one_row_per_row(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["grid"], data, tmp_path / "o")
    _error(p, "[8, 2, 2]", "one output row per input row")


def test_row_mixing_model_rejected(tmp_path):
    model = export("models:row_mean", 64, tmp_path / "mean.onnx")
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(model, data, tmp_path / "o")
    _error(p, "mean.onnx", "ReduceMean", code=1)


def test_task_does_not_fit_model(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["regressor"], data, tmp_path / "o", "--task", "classify")
    _error(p, "argmax", "--task regress")
    p = _eval(models["classifier"], data, tmp_path / "o", "--task", "regress")
    _error(p, "one output column", "3 columns")


def test_npz_errors(tmp_path, models):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((20, 4)), np.arange(20) % 3
    np.savez(tmp_path / "a.npz", X=x, label=y, group=np.arange(20) % 2, weight=x[:, 0])
    p = _eval(models["classifier"], tmp_path / "a.npz", tmp_path / "o", features="Z")
    _error(p, "a.npz", "no array 'Z'", "'X'")
    p = _eval(
        models["classifier"], tmp_path / "a.npz", tmp_path / "o", "--slice", "weight", features="X"
    )
    _error(p, "slice array 'weight' is f64", "integer or bool codes")
    np.savez(tmp_path / "b.npz", X=x, label=y[:19])
    _error(
        _eval(models["classifier"], tmp_path / "b.npz", tmp_path / "o", features="X"),
        "label array 'label' has 19 rows, earlier arrays 20",
    )
    x[4, 2] = np.nan
    np.savez(tmp_path / "c.npz", X=x, label=y)
    _error(
        _eval(models["classifier"], tmp_path / "c.npz", tmp_path / "o", features="X"),
        "column 'X[2]', row 5",
        "NaN",
    )
    np.savez(tmp_path / "d.npz", X=x.astype(">f8"), label=y)
    _error(
        _eval(models["classifier"], tmp_path / "d.npz", tmp_path / "o", features="X"),
        "array 'X'",
        "big-endian",
    )


def test_gpu_without_gpu(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["classifier"], data, tmp_path / "o", "--gpu", "--package", tmp_path / "pkg")
    _error(p, "no device", "--cpu-mixed")
    _error(_eval(models["classifier"], data, tmp_path / "o", "--gpu"), "--gpu needs --package")
    p = _eval(models["classifier"], data, tmp_path / "o", "--gpu", "--cpu-mixed", "--package", "x")
    _error(p, "exclude each other")


def test_gpu_needs_the_block(tmp_path, models):
    data = _csv(tmp_path / "d.csv", _rows())
    p = _eval(models["grid"], data, tmp_path / "o", "--gpu", "--package", tmp_path / "pkg")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr


def test_many_slice_values_warn(tmp_path, models):
    rows = [r[:5] + [f"id{i}"] for i, r in enumerate(_rows(80))]
    data = _csv(tmp_path / "d.csv", rows)
    p = _eval(models["classifier"], data, tmp_path / "o", "--slice", "group")
    assert p.returncode == 0, p.stderr
    assert "warning: slice column 'group' has 80 distinct values" in p.stderr
    assert "warning: 80 of 80 slices have fewer than 30 rows" in p.stderr
