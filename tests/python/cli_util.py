"""Helpers shared by the Python tests: run the rowfuse CLI and the exporter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RF_BIN = os.environ.get("RF_BIN", str(ROOT / "build" / "rowfuse"))


def env() -> dict:
    e = dict(os.environ)
    paths = [str(ROOT / "python"), str(ROOT / "examples"), str(ROOT / "tests" / "python")]
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
