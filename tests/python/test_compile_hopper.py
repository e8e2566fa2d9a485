"""The Hopper family (schedule persistent-wgmma, mode fused_wgmma) through `rowfuse compile`
on a machine without a GPU: its kernel builds for shapes with partial row tiles, channels
padded for the MMA, a hidden width that is no multiple of 64, streamed and resident
weights and the channels split over two warpgroups; the PTX holds warpgroup MMA and TMA
and no warp-level MMA, the SASS (disassembled at build time) HGMMA and no local-memory
spills; the plan records the geometry the C planner decided and the generator built; a
shape TMA cannot stride leaves the schedule out with the reason in plan.json.
"""

from __future__ import annotations

import json

import cutlass  # noqa: F401  (a missing DSL is an error here, not a skip)
import pytest
from cli_util import rowfuse

WGMMA = "persistent-wgmma"


def _compile(tmp_path, shape: str, *extra) -> tuple[dict, dict, str]:
    pkg = tmp_path / shape
    p = rowfuse("compile", "--mlp", shape, "--schedule", WGMMA, *extra, "-o", pkg)
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    facts = json.loads((pkg / "kernels.json").read_text())
    return plan, facts, p.stdout


def _wgmma_kernel(plan: dict, facts: dict, pkg) -> tuple[dict, dict]:
    s = plan["schedules"][WGMMA]
    assert s["available"] and len(s["kernels"]) == 1, s
    k = plan["kernels"][s["kernels"][0]]
    f = next(f for f in facts["kernels"] if f["name"] == k["name"])
    return k, f


def _check_machine_code(pkg, k: dict, f: dict) -> None:
    ptx = (pkg / f["files"]["ptx"]).read_text()
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned" in ptx and "cp.async.bulk.tensor" in ptx, k["name"]
    assert "mma.sync.aligned" not in ptx and "mbarrier.try_wait" in ptx
    # a block pair exchanges Y partial sums through distributed shared memory
    pair = "st.shared::cluster" in ptx and "barrier.cluster.wait" in ptx
    assert pair == (k["cluster_h"] == 2), k["name"]
    assert f["ptx_wgmma"] > 0 and f["ptx_tma"] > 0 and f["ptx_mma"] == 0
    assert "sass" in f["files"], "no SASS: the build found no nvdisasm"
    sass = (pkg / f["files"]["sass"]).read_text()
    assert "HGMMA" in sass and f["sass_hgmma"] > 0 and f["sass_hmma"] == 0
    assert f["sass_local"] == 0, f"{k['name']}: {f['sass_local']} local-memory instructions"
    assert 0 < f["registers"] <= 255 and k["registers"] == f["registers"]


@pytest.mark.parametrize(
    "shape, extra, geometry",
    [
        # partial row tile, C padded 40 -> 48, H = 72: a block pair, a resident chunk of 48
        # each (the second block's half partly padding)
        ("100x40x72", (), dict(tile_rows=64, padded_channels=48, hidden_chunk=48, cluster_h=2)),
        # 64 tiles: a block pair per tile, two resident chunks of 128 each
        ("4096x128x512", (), dict(hidden_chunk=128, weight_buffers=2, cluster_h=2)),
        # one block per tile: 4 chunks of 128 streamed through a 3-stage ring
        (
            "4096x128x512",
            ("--hidden-split", "off"),
            dict(hidden_chunk=128, weight_buffers=3, x_stages=1, cluster_h=1),
        ),
        # C split over two warpgroups (H in shared memory; C padded to 320), H = 520: the
        # weights stream through the blocked ring, whose producer has a warpgroup of its
        # own (2 x 128 consumer threads + 128)
        ("100x272x520", (), dict(threads=384, warps_n=2, padded_channels=320, cluster_h=1)),
        # C over two warpgroups with streamed weights: the blocked ring (C padded to 320, an
        # odd multiple of 64: W1 items of 64 channels, W2 items of 16 hidden units; chunks
        # of 128, the last one partial)
        (
            "200x264x1000",
            (),
            dict(warps_n=2, padded_channels=320, hidden_chunk=128, w1_block=64, w2_block=16),
        ),
    ],
)
def test_wgmma_package_builds(tmp_path, shape, extra, geometry):
    plan, facts, out = _compile(tmp_path, shape, *extra)
    assert plan["schedule"] == WGMMA and plan["schedule_reason"] == "chosen with --schedule"
    k, f = _wgmma_kernel(plan, facts, tmp_path / shape)
    assert k["mode"] == "fused_wgmma" and k["grid_balanced"] and k["blocks_per_sm"] >= 1
    for key, want in geometry.items():
        assert k[key] == want, (key, k[key], want)
    # the recorded geometry is whole: chunks cover H, the ring holds at most every chunk
    assert k["padded_hidden"] % k["hidden_chunk"] == 0 and k["padded_hidden"] >= k["hidden"]
    per_block = k["padded_hidden"] // k["hidden_chunk"] // k["cluster_h"]
    if k["w1_block"]:  # blocked ring: items of a chunk, not chunks
        assert 3 <= k["weight_buffers"] <= 16 and k["padded_channels"] % k["w1_block"] == 0
    else:
        assert 1 <= k["weight_buffers"] <= per_block
    assert 1 <= k["x_stages"] <= 4 and 0 < k["smem_bytes"] <= plan["target"]["smem_per_block"]
    assert k["name"] in out and "TMA rings" in out
    _check_machine_code(tmp_path / shape, k, f)


def test_wgmma_unavailable_when_tma_cannot_stride(tmp_path):
    """C = 36 is no multiple of 8: the package holds the other schedules and says why it
    lacks this one; asking for it by name fails with the same reason."""
    pkg = tmp_path / "odd"
    p = rowfuse("compile", "--mlp", "17x36x80", "-o", pkg)
    assert p.returncode == 0, p.stderr
    plan = json.loads((pkg / "plan.json").read_text())
    s = plan["schedules"][WGMMA]
    assert not s["available"] and s["kernels"] == []
    assert "multiples of 8" in s["rejected"] and "TMA" in s["rejected"]
    assert all(k["mode"] != "fused_wgmma" for k in plan["kernels"])
    assert plan["schedules"]["persistent-smem"]["available"]
    assert f"{WGMMA} not in this package" in p.stdout
    p = rowfuse("compile", "--mlp", "17x36x80", "--schedule", WGMMA, "-o", tmp_path / "no")
    assert p.returncode == 1 and "multiples of 8" in p.stderr
