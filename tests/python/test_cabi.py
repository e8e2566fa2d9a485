"""The C boundary Python crosses: every ctypes struct of rowfuse.capi.cabi against the layout
the C compiler gives the header's struct (the rf_abi_layout program), the constants Python
mirrors, and the name tables Python reads from include/rowfuse/plan.h against the CLI."""

from __future__ import annotations

import ctypes
import json
import subprocess

from cli_util import BUILD_DIR, rowfuse
from rowfuse.capi import cabi, names

LAYOUT = BUILD_DIR / "rf_abi_layout"


def _c_layout() -> dict:
    assert LAYOUT.exists(), f"{LAYOUT} is missing: build the project first (make build)"
    return json.loads(subprocess.run([str(LAYOUT)], capture_output=True, check=True).stdout)


def test_every_struct_matches_c():
    c = _c_layout()
    assert set(cabi.STRUCTS) <= set(c), sorted(set(cabi.STRUCTS) - set(c))
    for cname, cls in cabi.STRUCTS.items():
        want = c[cname]
        assert ctypes.sizeof(cls) == want["size"], (cname, ctypes.sizeof(cls), want["size"])
        fields = [f[0] for f in cls._fields_]
        assert fields == list(want["fields"]), (cname, fields, list(want["fields"]))
        for f in fields:
            assert getattr(cls, f).offset == want["fields"][f], (cname, f)


def test_constants_match_c():
    assert _c_layout()["constants"] == cabi.CONSTANTS


def test_a_mismatch_is_caught():
    """The comparison above can fail: a struct with one field dropped disagrees."""

    class Short(ctypes.Structure):
        _fields_ = cabi.MlpArgs._fields_[:-1]

    assert ctypes.sizeof(Short) != _c_layout()["rf_mlp_args_t"]["size"]


def test_schedule_names_match_the_cli(tmp_path):
    """The C side builds its table from the same header list Python parses: the CLI's
    list of known schedules is exactly rowfuse.capi.names.SCHEDULES, in order."""
    p = rowfuse("compile", "--mlp", "8x8x8", "--schedule", "nope", "-o", tmp_path / "p", check=2)
    known = p.stderr.split("(known:")[1].split(")")[0].split()
    assert tuple(known) == names.SCHEDULES
    assert names.KERNEL_MODES == ("fused_smem", "fused_gmem", "proj1", "proj2", "fused_wgmma")
    assert names.SCHEDULES[-2:] == ("persistent-wgmma", "cublaslt")
    assert names.PLAN_VERSION >= 2
