"""The command line as users expect one: every command answers --help and -h with its usage
(exit 0), `rowfuse --help` lists every command, `--version` says what the binary was built
from, a mistyped command gets a suggestion, and the test-only --plant-fault stays out of
the usage while still working."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess

import pytest
from cli_util import ROOT, rowfuse

# What the CLI dispatches, written down here independently of main.c's table.
COMMANDS = [
    "verify",
    "run",
    "compile",
    "schedule",
    "inspect",
    "check",
    "bench",
    "report",
    "eval",
    "lab",
    "iree",
]


def _one_line(p, code=2):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_top_level_help_lists_every_command():
    p = rowfuse("--help", check=0)
    listed = re.findall(r"^  rowfuse (\S+)", p.stdout, flags=re.M)
    assert sorted(listed) == sorted(COMMANDS), p.stdout
    assert "--version" in p.stdout
    assert rowfuse().returncode == 2  # no command: usage on stderr, exit 2


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_command_help(command, flag):
    p = rowfuse(command, flag, check=0)
    assert p.stdout.startswith(f"usage: rowfuse {command}"), p.stdout
    assert len(p.stdout.splitlines()) >= 3, p.stdout  # the synopsis and what it does
    assert p.stderr == "", p.stderr


def test_help_after_other_arguments():
    """--help anywhere among the arguments wins over running the command."""
    p = rowfuse("compile", "--mlp", "49x48x96", "-o", "/nonexistent/pkg", "--help", check=0)
    assert p.stdout.startswith("usage: rowfuse compile"), p.stdout
    assert rowfuse("help", "eval", check=0).stdout.startswith("usage: rowfuse eval")


def test_plant_fault_is_not_in_the_usage(tmp_path):
    for args in (["--help"], ["compile", "--help"]):
        out = rowfuse(*args, check=0).stdout
        assert "plant" not in out, out
    # ... yet the switch still reaches the planner, which names the faults it knows
    line = _one_line(
        rowfuse("compile", "--mlp", "49x48x96", "--plant-fault", "bogus", "-o", tmp_path / "p")
    )
    assert "--plant-fault must be one of" in line and "'bogus'" in line, line


def test_version():
    p = rowfuse("--version", check=0)
    fields = dict(ln.split(": ", 1) for ln in p.stdout.splitlines()[1:])
    assert p.stdout.startswith("rowfuse "), p.stdout
    rev = fields["git revision"]
    if rev != "unknown" and (ROOT / ".git").exists():
        # a commit of this repository (the build may be older than HEAD)
        q = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"])
        assert q.returncode == 0, rev
    assert fields["CUDA"] == "none" or re.fullmatch(r"\d+\.\d+(\.\d+)?", fields["CUDA"]), fields
    try:
        want = importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        want = "unknown"
    assert fields["CuTe DSL (nvidia-cutlass-dsl)"] == want, fields
    assert rowfuse("-V", check=0).stdout == p.stdout


@pytest.mark.parametrize(
    "typed,meant",
    [("compiel", "compile"), ("verfy", "verify"), ("chek", "check"), ("insp", "inspect")],
)
def test_mistyped_command_gets_a_suggestion(typed, meant):
    line = _one_line(rowfuse(typed))
    assert f"unknown command '{typed}'" in line and f"did you mean '{meant}'?" in line, line


def test_unknown_command_far_from_any():
    line = _one_line(rowfuse("frobnicate"))
    assert "unknown command 'frobnicate'" in line and "did you mean" not in line, line
    assert "rowfuse --help" in line
