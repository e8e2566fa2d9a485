"""The report's scheduler section: the choice of `--schedule auto` beside the best variant
measured at each shape, from a recorded run (no GPU), with the real `rowfuse schedule`."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_util import RF_BIN
from rowfuse import report

DATA = Path(__file__).parent / "data" / "bench_run.json"


def test_fake_chooser_verdicts():
    docs = report.load([str(DATA)])
    lines = report.render_scheduler(docs, lambda r, c, h: ("persistent-smem", "test"))
    rows = [ln for ln in lines if ln.startswith("| ") and "shape" not in ln]
    assert rows, lines
    for ln in rows:
        assert "persistent-smem" in ln
        assert "best" in ln or "loses to" in ln or "not measured" in ln
    # A choice that was never measured is reported as such, not as a win.
    lines = report.render_scheduler(docs, lambda r, c, h: ("no-such-schedule", "test"))
    assert all("best" not in ln for ln in lines if ln.startswith("| ") and "shape" not in ln)


def test_without_binary_says_so():
    docs = report.load([str(DATA)])
    assert "not evaluated" in "\n".join(report.render_scheduler(docs, None))


@pytest.mark.skipif(not Path(RF_BIN).exists(), reason="rowfuse binary not built")
def test_real_scheduler_choices():
    choose = report.rowfuse_chooser(RF_BIN)
    assert choose(49, 48, 96)[0] == "persistent-smem"
    assert choose(8192, 512, 2048)[0] == "cublaslt"
