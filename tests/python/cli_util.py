"""Helpers shared by the Python tests: run the rowfuse CLI and the exporter.

The tests use rowfuse as installed (`make build` installs it into a virtual environment
and runs pytest with its interpreter): the CLI is $RF_BIN, else the rowfuse beside this
interpreter, else build/rowfuse; $ROWFUSE_LIB overrides the library the package loads. A
source checkout without an install works too with PYTHONPATH=python and both variables.
Test programs of the CMake build (rf_abi_layout) come from $RF_BUILD_DIR, else the folder
of $RF_BIN, else build/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BESIDE = Path(sys.executable).parent / "rowfuse"
RF_BIN = os.environ.get("RF_BIN") or str(
    _BESIDE if _BESIDE.exists() else ROOT / "build" / "rowfuse"
)
BUILD_DIR = Path(
    os.environ.get("RF_BUILD_DIR")
    or (Path(os.environ["RF_BIN"]).parent if os.environ.get("RF_BIN") else ROOT / "build")
)


def env() -> dict:
    e = dict(os.environ)
    paths = [str(ROOT / "examples"), str(ROOT / "tests" / "python")]
    e["PYTHONPATH"] = os.pathsep.join(paths + [e.get("PYTHONPATH", "")])
    return e


def rowfuse(*args, check=None) -> subprocess.CompletedProcess:
    """Runs the rowfuse CLI; returns the completed process (text output)."""
    p = subprocess.run([RF_BIN, *map(str, args)], capture_output=True, text=True, env=env())
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def export(factory: str, rows: int, out: Path) -> Path:
    """Exports MODULE:FACTORY through `python -m rowfuse.export`; returns the .onnx path."""
    p = subprocess.run(
        [sys.executable, "-m", "rowfuse.export", factory, "--rows", str(rows), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env(),
        cwd=str(ROOT),
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def generator_refuses(tmp: Path, spec: dict, what: str) -> None:
    """Runs the kernel generator on `spec` (a kernel_spec.json object) in a folder of tmp
    and asserts that it fails naming `what` on stderr."""
    d = tmp / what.replace(" ", "_")
    d.mkdir()
    (d / "kernel_spec.json").write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "rowfuse.kernels.build", "--spec", str(d / "kernel_spec.json")]
    p = subprocess.run(
        cmd + ["--out", str(d), "--quiet"], capture_output=True, text=True, env=env()
    )
    assert p.returncode != 0 and what in p.stderr, (what, p.stderr[-600:])
