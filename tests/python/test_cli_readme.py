"""The README's Python export example runs as written: a trained module saved with
torch.save, exported by rowfuse.export.export, verified by the CLI; and the README says how
a model with a head is compiled."""

from __future__ import annotations

import re
import subprocess
import sys

from cli_util import ROOT, env, rowfuse


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"### {title}\n")
    end = text.find("\n#", start + 4)
    return text[start : end if end > 0 else len(text)]


def test_readme_exports_a_trained_module(tmp_path):
    section = _section("Exporting a trained module")
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert "rowfuse.export import export" in code and "MODULE:FACTORY" in section
    # the "trained" module: the example block with seeded weights, saved the usual way
    make = "import torch, residual_mlp; torch.save(residual_mlp.make(), 'block.pt')"
    subprocess.run([sys.executable, "-c", make], cwd=tmp_path, env=env(), check=True)
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env(), capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "block.fx.txt").is_file()
    v = rowfuse("verify", tmp_path / "block.onnx", "--quiet", check=0)
    assert "accepted" in v.stdout, v.stdout


def test_readme_shows_compile_block_under_torch_compile():
    section = " ".join(_section("From PyTorch").split())
    assert "compile_block(model.ffn, rows=64)" in section, section
    assert "torch.compile(model, fullgraph=True)" in section and "rowfuse::block" in section
