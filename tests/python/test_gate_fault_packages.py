"""Planted GPU faults, built here without a GPU: `rowfuse compile --plant-fault list` names
every fault and its schedules, and each kernel fault changes the generated code where it
should, against the correct kernel of the same specification (sm_90a PTX; for the TMA
fill, the DSL IR of the host-side descriptors, since the kernel's PTX is the same):

- no-ring-wait: the wgmma kernel waits on fewer mbarriers (mbarrier.try_wait);
- ring-phase: the same waits, one of them for the other parity;
- no-oob-fill: X, W1, W2 described to TMA with the padded extents (32 > 24 channels);
- no-relu: the fused_smem kernel has fewer max.f32 (H's ReLU).
Whether the GPU check catches them is for the GPU driver (src/harness/README.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from cli_util import env, rowfuse


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    """A correct package at 777x24x200 (C and H multiples of 8: wgmma is built)."""
    pkg = tmp_path_factory.mktemp("gate") / "ok"
    rowfuse("compile", "--mlp", "777x24x200", "-o", pkg, check=0)
    return pkg


def build_one(tmp, pkg, mode: str, fault: str, **fields):
    """The generator on the correct package's spec, one kernel (of `mode`), fault planted
    (and `fields` set): that kernel's spec entry and the folder of its files."""
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    spec["kernels"] = [dict(k, fault=fault, **fields) for k in spec["kernels"] if k["mode"] == mode]
    assert len(spec["kernels"]) == 1, mode
    out = tmp / f"{mode}-{fault}-{len(fields)}"
    out.mkdir()
    (out / "kernel_spec.json").write_text(json.dumps(spec))
    cmd = [sys.executable, "-m", "rowfuse.kernels.build", "--spec", str(out / "kernel_spec.json")]
    cmd += ["--out", str(out), "--link", "objects", "--quiet"]
    subprocess.run(cmd, check=True, env=env())
    return spec["kernels"][0], out


def kernel_file(pkg, mode: str, ext: str) -> str:
    spec = json.loads((pkg / "kernel_spec.json").read_text())
    (k,) = [k for k in spec["kernels"] if k["mode"] == mode]
    return (pkg / "kernels" / f"{k['name']}.{ext}").read_text()


def test_the_list_names_every_fault_and_its_schedules():
    p = rowfuse("compile", "--plant-fault", "list", check=0)
    rows = {line.split("\t")[0]: line.split("\t")[1] for line in p.stdout.splitlines()}
    for f in ("no-ring-wait", "ring-phase", "no-oob-fill"):
        assert rows[f] == "persistent-wgmma", rows
    for f in ("no-barrier", "no-pad", "no-relu"):
        assert "persistent-smem" in rows[f] and "wgmma" not in rows[f], rows
    # conventional has no barrier between H's store and GEMM2 (two launches)
    assert "conventional" not in rows["no-barrier"] and "conventional" in rows["no-pad"]
    assert all(len(line.split("\t")) == 3 for line in p.stdout.splitlines())


def test_wgmma_ring_faults_change_the_waits(tmp_path, correct):
    ok = kernel_file(correct, "fused_wgmma", "ptx")
    waits = re.findall(r"mbarrier\.try_wait\.parity\S* \S+, \[\S+\], (\S+);", ok)
    assert waits, "no mbarrier waits in the correct wgmma kernel"
    k, out = build_one(tmp_path, correct, "fused_wgmma", "no_ring_wait")
    skip = (out / "kernels" / f"{k['name']}.ptx").read_text()
    assert skip.count("mbarrier.try_wait") < ok.count("mbarrier.try_wait")
    k, out = build_one(tmp_path, correct, "fused_wgmma", "ring_phase")
    phase = (out / "kernels" / f"{k['name']}.ptx").read_text()
    flipped = re.findall(r"mbarrier\.try_wait\.parity\S* \S+, \[\S+\], (\S+);", phase)
    assert len(flipped) == len(waits) and flipped != waits


def test_wgmma_oob_fill_fault_pads_the_tma_views(tmp_path, correct):
    ok = kernel_file(correct, "fused_wgmma", "mlir")
    assert '"(?,24):(24,1)"' in ok and '"(?,32):(24,1)"' not in ok
    k, out = build_one(tmp_path, correct, "fused_wgmma", "no_oob_fill")
    ir = (out / "kernels" / f"{k['name']}.mlir").read_text()
    assert '"(?,32):(24,1)"' in ir  # X: 32 padded channels over rows of 24


def test_mma_no_relu_drops_the_max(tmp_path, correct):
    ok = kernel_file(correct, "fused_smem", "ptx")
    k, out = build_one(tmp_path, correct, "fused_smem", "no_relu")
    ptx = (out / "kernels" / f"{k['name']}.ptx").read_text()
    assert ptx.count("max.f32") < ok.count("max.f32")
    assert ptx.count("mma.sync") == ok.count("mma.sync")


def test_a_fault_without_a_site_is_refused_by_the_generator(tmp_path, correct):
    """no-barrier in a conventional kernel would be the correct code under a fault's name."""
    with pytest.raises(subprocess.CalledProcessError) as e:
        build_one(tmp_path, correct, "proj2", "no_barrier")
    assert e.value.returncode != 0
    k, out = build_one(tmp_path, correct, "fused_gmem", "no_barrier")  # it has the site
    assert (out / "kernels" / f"{k['name']}.ptx").exists()
    # a launcher fault is in the shim: every kernel accepts it, its code unchanged
    k, out = build_one(tmp_path, correct, "proj2", "stream_legacy")
    assert (out / "kernels" / f"{k['name']}.ptx").read_text() == kernel_file(
        correct, "proj2", "ptx"
    )


CLOCK = re.compile(r"mov\.u64\s+%rd\d+, %clock64;")


@pytest.mark.parametrize("mode", ["fused_smem", "proj2", "fused_wgmma"])
def test_a_checking_build_spins_before_its_copies(tmp_path, correct, mode):
    """--check-delay N: a loop on %clock64 against N before the copies (cp.async in the
    mma.sync kernels, TMA in the wgmma kernel); the plain build has none."""
    assert not CLOCK.search(kernel_file(correct, mode, "ptx"))
    k, out = build_one(tmp_path, correct, mode, "", check_delay=12345)
    ptx = (out / "kernels" / f"{k['name']}.ptx").read_text()
    assert len(CLOCK.findall(ptx)) >= 2
    assert re.search(r"setp\.lt\.s64\s+%p\d+, %rd\d+, 12345;", ptx)


TMA = "cp.async.bulk.tensor"


def prologue_issues(ptx: str) -> tuple[int, int]:
    """TMA issues between the kernel's first two block barriers (the rings' prologue, X
    and the weights in the plain build) and between the second barrier and the first
    wgmma."""
    lines = ptx.splitlines()
    bars = [i for i, line in enumerate(lines) if re.match(r"\s*bar\.sync\s+0;", line)]
    first_mma = next(i for i, line in enumerate(lines) if "wgmma.mma_async" in line)
    assert len(bars) >= 2 and bars[1] < first_mma
    between = sum(TMA in line for line in lines[bars[0] : bars[1]])
    after = sum(TMA in line for line in lines[bars[1] : first_mma])
    return between, after


def test_a_checking_build_requests_the_first_weight_lap_after_the_barrier(tmp_path, correct):
    """Without a producer warpgroup, warp 0 requests the weight ring's first lap; in the
    plain build before the block barrier (every stage lands while the biases are staged),
    in a checking build after it, so a consumer that skips its wait reads the poison.
    X is still requested first in both."""
    plain_ptx = kernel_file(correct, "fused_wgmma", "ptx")
    plain_between, plain_after = prologue_issues(plain_ptx)
    k, out = build_one(tmp_path, correct, "fused_wgmma", "", check_delay=20000)
    assert k["w1_block"] == 0  # the layout without a producer warpgroup
    ptx = (out / "kernels" / f"{k['name']}.ptx").read_text()
    between, after = prologue_issues(ptx)
    assert plain_after == 0 and plain_between > between > 0
    assert after == plain_between - between  # every weight issue moved, none lost
    # stage 0, the first any consumer reads, is requested last, right before the first
    # read's own full-barrier wait: no other wait (the X tile's) lies between them, so a
    # read that skips that wait comes a TMA latency early at every shape
    assert waits_before_first_mma(plain_ptx) > 2 >= waits_before_first_mma(ptx)


def waits_before_first_mma(ptx: str) -> int:
    """mbarrier try_wait instructions between the last TMA issue before the kernel's first
    wgmma and that wgmma (one wait helper emits two: its first try and its loop's)."""
    lines = ptx.splitlines()
    first_mma = next(i for i, line in enumerate(lines) if "wgmma.mma_async" in line)
    last = max(i for i, line in enumerate(lines[:first_mma]) if TMA in line)
    return sum("mbarrier.try_wait" in line for line in lines[last:first_mma])


def test_compile_writes_the_delay_and_bench_refuses_a_checking_build(tmp_path, correct):
    """The planner carries --check-delay to every kernel's spec; `rowfuse bench --c`
    refuses such a package before it touches a GPU (its time would be the spins')."""
    import shutil

    pkg = tmp_path / "delayed"
    shutil.copytree(correct, pkg)
    plan = json.loads((pkg / "plan.json").read_text())
    assert all(k["check_delay"] == 0 for k in plan["kernels"])
    for k in plan["kernels"]:
        k["check_delay"] = 20000
    (pkg / "plan.json").write_text(json.dumps(plan))
    p = rowfuse("bench", pkg, "--c", "--rows", "64", check=None)
    assert p.returncode != 0
    assert "checking build" in p.stderr and "--check-delay 20000" in p.stderr, p.stderr
