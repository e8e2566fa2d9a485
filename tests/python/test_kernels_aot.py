"""CPU-only checks of the ahead-of-time kernel build (kernels/build.py), no GPU needed.

Builds the example shape (C=48, H=96) into a temporary package and checks kernels.json,
that every schedule's kernels are present with their PTX / DSL IR / cubin / object, that
the PTX holds tensor-core mma instructions for sm_90a, and that the linked library
exports the kernel ABI. Skipped (with the reason) only when the CuTe DSL is not
importable.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(REPO, "kernels")

try:
    import cutlass  # noqa: F401
    import cutlass.cute  # noqa: F401

    HAVE_DSL = True
    WHY = ""
except Exception as e:  # noqa: BLE001
    HAVE_DSL = False
    WHY = f"CuTe DSL (nvidia-cutlass-dsl) not importable: {e}"

pytestmark = pytest.mark.skipif(not HAVE_DSL, reason=WHY)

ABI = [
    "rf_pkg_abi_version",
    "rf_pkg_channels",
    "rf_pkg_hidden",
    "rf_pkg_kernel_count",
    "rf_pkg_init",
    "rf_pkg_launch",
]


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    out = tmp_path_factory.mktemp("pkg_c48_h96")
    link = "so" if shutil.which("gcc") and _cuda_static() else "objects"
    cmd = [
        sys.executable,
        os.path.join(KERNELS, "build.py"),
        "--channels",
        "48",
        "--hidden",
        "96",
        "--rows",
        "49",
        "--tile-rows",
        "16",
        "--arch",
        "sm_90a",
        "--out",
        str(out),
        "--link",
        link,
        "--quiet",
    ]
    subprocess.run(cmd, check=True, cwd=REPO)
    return str(out), link


def _cuda_static():
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "lib64", "libcudart_static.a")):
            return True
    return False


def test_kernels_json_valid(pkg):
    path, _ = pkg
    meta = json.load(open(os.path.join(path, "kernels.json")))
    assert meta["channels"] == 48 and meta["hidden"] == 96
    assert meta["arch"] == "sm_90a"
    assert meta["rows_dynamic"] is True
    assert set(meta["schedules"]) == {"persistent-smem", "persistent-gmem", "conventional"}
    counts = {"persistent-smem": 1, "persistent-gmem": 1, "conventional": 2}
    for name, s in meta["schedules"].items():
        assert s["kernel_count"] == counts[name] == len(s["kernels"])
        assert s["tile_rows"] == 16
        for k in s["kernels"]:
            assert k["threads"] % 32 == 0 and 32 <= k["threads"] <= 1024
            assert 0 < k["smem_bytes"] <= 227 * 1024
            assert k["tile_rows"] == 16


def test_every_kernel_present_with_artifacts(pkg):
    path, _ = pkg
    meta = json.load(open(os.path.join(path, "kernels.json")))
    modes = []
    for s in meta["schedules"].values():
        for k in s["kernels"]:
            modes.append(k["mode"])
            for key in ("header", "object", "ptx", "mlir", "cubin"):
                f = os.path.join(path, k["files"][key])
                assert os.path.getsize(f) > 0, f
    assert sorted(modes) == ["fused_gmem", "fused_smem", "proj1", "proj2"]


def test_ptx_has_tensor_core_mma_for_sm90a(pkg):
    path, _ = pkg
    meta = json.load(open(os.path.join(path, "kernels.json")))
    for s in meta["schedules"].values():
        for k in s["kernels"]:
            ptx = open(os.path.join(path, k["files"]["ptx"])).read()
            assert re.search(r"^\.target sm_90a", ptx, re.M), k["name"]
            n_mma = len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16", ptx))
            assert n_mma > 0 and n_mma == k["ptx_mma"], k["name"]
            assert "ldmatrix.sync" in ptx and "cp.async" in ptx
            # the DSL IR is the kernel's, not an empty module
            assert "cute" in open(os.path.join(path, k["files"]["mlir"])).read()
            if "sass" in k["files"]:
                sass = open(os.path.join(path, k["files"]["sass"])).read()
                assert "HMMA" in sass, k["name"]


def test_library_exports_abi(pkg):
    path, link = pkg
    if link != "so":
        pytest.skip("no gcc / libcudart_static.a here: package left as objects + link.sh")
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not available")
    out = subprocess.run(
        [nm, "-D", "--defined-only", os.path.join(path, "librowfuse_pkg.so")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    syms = set(re.findall(r"\bT (\w+)", out))
    assert set(ABI) <= syms
    assert all(s.startswith("rf_pkg_") for s in syms), sorted(syms)[:5]


def test_too_big_shape_rejected_with_bytes():
    sys.path.insert(0, KERNELS)
    import rowfuse_kernels as rk

    with pytest.raises(rk.ShapeError, match=r"needs \d+ bytes of shared memory.*\d+ available"):
        rk.make_plan("fused_smem", 1024, 4096, 16)
    p = rk.make_plan("fused_smem", 13, 40, 16)  # partial tiles: padded, not rejected
    assert p.cp % 16 == 0 and p.hp % 16 == 0 and p.cp >= 13 and p.hp >= 40


def test_partial_odd_shape_builds_compressed(tmp_path):
    """C=7, H=9: nothing a multiple of the MMA shape, odd fp16 rows (no cp.async vector
    fits): every kernel still compiles to tensor-core code; artifacts gzipped."""
    import gzip

    out = tmp_path / "pkg_c7_h9"
    cmd = [
        sys.executable,
        os.path.join(KERNELS, "build.py"),
        "--channels",
        "7",
        "--hidden",
        "9",
        "--out",
        str(out),
        "--link",
        "objects",
        "--compress",
        "--quiet",
    ]
    subprocess.run(cmd, check=True, cwd=REPO)
    meta = json.load(open(out / "kernels.json"))
    assert set(meta["schedules"]) == {"persistent-smem", "persistent-gmem", "conventional"}
    for s in meta["schedules"].values():
        for k in s["kernels"]:
            assert k["padded_channels"] == 16 and k["padded_hidden"] == 16
            ptx = gzip.open(out / k["files"]["ptx"], "rt").read()
            assert "mma.sync.aligned.m16n8k16" in ptx, k["name"]
            assert os.path.getsize(out / k["files"]["object"]) > 0
    assert os.access(out / "link.sh", os.R_OK)
