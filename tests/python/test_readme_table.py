"""The README's benchmark table is the one its committed run JSON gives (rowfuse.bench.readme)."""

import json
import re
from pathlib import Path

from rowfuse.bench import readme

ROOT = Path(__file__).resolve().parents[2]


def _source() -> str:
    m = re.search(r"<!-- bench-table: (\S+) -->", (ROOT / "README.md").read_text())
    assert m, "README.md has no bench-table block"
    return m.group(1)


def test_readme_table_matches_its_json(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert readme.main([_source(), "--check", "README.md"]) == 0


def test_a_changed_number_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    src = _source()
    text = (ROOT / "README.md").read_text()
    begin = text.index(f"<!-- bench-table: {src} -->")
    row = text.index("| 49x48x96 |", begin)
    planted = text[:row] + text[row:].replace("| 49x48x96 | **", "| 49x48x96 | **9", 1)
    (tmp_path / "README.md").write_text(planted)
    assert readme.main([src, "--check", str(tmp_path / "README.md")]) == 1
    assert "differs" in capsys.readouterr().err


def test_bold_marks_the_fastest():
    run = {
        "sections": [
            {
                "section": "10x8x16 (rows x channels x hidden)",
                "about": ["c host, x"],
                "rows": [
                    {"variant": "persistent-smem + graph", "GPU span": "2.00 us [1, 3]"},
                    {"variant": "cuBLASLt (C) + graph", "GPU span": "1.50 us [1, 2]"},
                ],
            },
            {
                "section": "10x8x16 (rows x channels x hidden)",
                "about": ["python host, x"],
                "rows": [{"variant": "Triton fused + graph", "GPU span": "3.25 us [3, 4]"}],
            },
        ]
    }
    lines = readme.table(run)
    assert lines[2] == "| 10x8x16 | 2.00 | - | **1.50** | 3.25 | - |"


def test_a_run_without_shapes_is_a_user_error(tmp_path, capsys):
    bad = tmp_path / "run.json"
    bad.write_text(json.dumps({"sections": [{"section": "notes", "about": [], "rows": []}]}))
    assert readme.main([str(bad)]) == 2
    assert "no per-shape sections" in capsys.readouterr().err
