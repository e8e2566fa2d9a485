"""`rowfuse compile` of an FFN at decode-sized row counts: the weight-streaming schedule
(src/compile/chain_stream.c, python/rowfuse/kernels/chain_stream.py) without a GPU.

A SwiGLU FFN with RMSNorm (512 -> 2048, 6 MB of fp16 weights) at 4 rows is planned as
chain_stream by the automatic choice, with --schedule chain it keeps chain_mma; a GPT-2
style GELU FFN (128 -> 512) is forced with --schedule chain-stream. The kernel compiles to
sm_90a PTX holding the tensor-core mma.sync and the cross-block reduction: each block's
arrival (a release fence, then a GPU-scope add), the reducers' wait for every block (an
acquire load compared with `blocks`, then an acquire fence), the read counter (acq_rel)
whose last reader resets both counters; no local memory; it links into a library exporting
the chain entry. The planted faults change exactly that code: stream-no-fence drops the
fences and relaxes the wait, stream-early-reduce waits for blocks - 1 arrivals,
stream-no-reset leaves the arrival counter set; their checking build (--check-delay) makes
the last block spin before its partial stores. Needs the rowfuse binary (RF_BIN), torch +
onnx and the CuTe DSL.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import subprocess

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("cutlass")

from cli_util import rowfuse  # noqa: E402
from rowfuse import blocks  # noqa: E402
from rowfuse.export import export  # noqa: E402

# a block's arrival: the release fence, then the add to the tile's arrival counter
ARRIVE = r"fence\.acq_rel\.gpu;\n(\s*mov\.b32.*\n)?\s*red\.relaxed\.gpu\.global\.add\.s32"
# the reducers' wait: the counter loaded (acquire) and compared with the count it waits for
WAIT = r"ld\.acquire\.gpu\.global\.b32\s+(%r\d+),.*\n\s*setp\.lt\.s32\s+%p\d+, \1, "
# the read counter and the test of its old value (the last reader resets)
READ = r"atom\.global\.acq_rel\.add\.u32\s+(%r\d+),.*\n\s*setp\.(eq|ne)\.b32\s+%p\d+, \1, "
EXCH = r"atom\.global(\.relaxed)?(\.gpu)?\.exch"


def _model(tmp, kind, c, h):
    module, ex = blocks.make(kind, small=True, rows=4, c=c, h=h)
    return export(module, ex, 4, str(tmp / f"{kind}_{c}.onnx"))


def _compile(model, out, *extra):
    p = rowfuse("compile", model, "--rows", 4, "-o", out, *extra)
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.loads((out / "plan.json").read_text())
    (k,) = plan["kernels"]
    facts = json.loads((out / "kernels.json").read_text())["kernels"][0]
    path = out / facts["files"]["ptx"]
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        ptx = f.read()
    return p.stdout, plan, k, facts, ptx


@pytest.fixture(scope="module")
def swiglu(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("swiglu")
    return tmp, _model(tmp, "llama_ffn", 512, 2048)


def test_auto_picks_the_stream_for_few_rows(swiglu):
    tmp, model = swiglu
    out, plan, k, facts, ptx = _compile(model, tmp / "auto")
    assert plan["schedule"] == "chain_stream" and k["mode"] == "chain_stream", out
    assert "(chain_stream)" in out and "few rows and large weights" in out
    # the split: one block per slice of the hidden, every column covered, one launch's grid
    hidden = plan["chain"]["stages"][1]["n"]
    assert k["grid"] == k["blocks"] and k["slice"] % 16 == 0
    assert k["blocks"] * k["slice"] >= hidden > (k["blocks"] - 1) * k["slice"]
    assert k["scratch_partial_per_row"] == k["blocks"] * plan["chain"]["out_width"]
    assert k["cost_us"] < k["chain_mma_cost_us"]
    assert ".target sm_90a" in ptx and ptx.count("mma.sync.aligned.m16n8k16") > 0
    assert ptx.count("fence.acq_rel.gpu") == 2, "release before the arrival, acquire after"
    assert len(re.findall(ARRIVE, ptx)) == 1
    # the reducers wait for every block's arrival, then the last of them to read resets
    assert re.search(WAIT + rf"{k['blocks']};", ptx)
    assert len(re.findall(r"atom\.global\.acq_rel(\.gpu)?\.add", ptx)) == 1
    assert re.search(READ + rf"{k['blocks'] - 1};", ptx)
    assert len(re.findall(EXCH, ptx)) == 2
    assert "mbarrier" not in ptx and k["threads"] == 32 * k["warps"]
    assert re.search(rf"bar\.sync\s+1, {32 * k['warps']};", ptx)
    # every block reduces its share of Y's columns; the shares cover Y
    out_width = plan["chain"]["out_width"]
    assert k["reduce_cols"] % 8 == 0 and k["blocks"] * k["reduce_cols"] >= out_width
    assert k["scratch_counters_per_tile"] == 2
    assert facts.get("sass_local", 0) == 0 and facts["registers"] <= 255
    table = (tmp / "auto" / "rf_pkg_table.h").read_text()
    assert f"RF_PKG_STREAM_KERNELS(X) X({k['name']})" in table
    syms = subprocess.run(
        ["nm", "-D", str(tmp / "auto" / "librowfuse_pkg.so")], capture_output=True, text=True
    ).stdout
    assert "rf_pkg_launch_chain" in syms


def test_reduction_through_the_ring(swiglu):
    """Each block copies a group of blocks' partials of its reduce columns (a pass of
    reduce_rows rows) into one half of the idle weight ring: two groups fit, every block is
    in one, and the kernel asks for one resident block per SM (so ptxas does not spill to
    fit more)."""
    from rowfuse.kernels.chain_stream import StreamPlan  # noqa: PLC0415

    tmp, model = swiglu
    _, _, k, facts, ptx = _compile(model, tmp / "reduce")
    spec = json.loads((tmp / "reduce" / "kernel_spec.json").read_text())["kernels"][0]
    p = StreamPlan.from_spec(spec, 8)
    # a pass of the reduction: the 4 rows planned for (a power of two, at most the tile)
    assert p.reduce_rows == 4 and p.tile_rows % p.reduce_rows == 0
    group = p.reduce_rows * p.reduce_cols * 4
    assert 0 < p.reduce_group <= p.blocks
    assert 2 * p.reduce_group * group <= p.weight_buffers * p.ring_bytes
    assert ".minnctapersm 1" in ptx and facts.get("sass_local", 0) == 0
    # a ring too small for two groups keeps the register path
    small = dataclasses.replace(p, weight_buffers=1, ring_bytes=group)
    assert small.reduce_group == 0


# a TMA box of W into shared memory, completing on an mbarrier
TMA_BOX = r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.tile\.mbarrier::complete_tx::bytes"


def test_auto_copies_weights_with_cp_async(swiglu):
    """Within the L2's bytes of weights (this FFN holds 4 MB), auto (and --stream-tma off)
    keep the cp.async ring: every MMA thread copies, no TMA, no mbarrier."""
    tmp, model = swiglu
    for sub, extra in (("auto-cp", ()), ("off-cp", ("--stream-tma", "off"))):
        out, _, k, _, ptx = _compile(model, tmp / sub, *extra)
        assert k["weight_copy"] == "cp_async" and k["threads"] == 32 * k["warps"], out
        assert "cp.async.bulk.tensor" not in ptx and "mbarrier" not in ptx
        assert "cp.async.cg.shared.global" in ptx and "(cp.async)" in out


def test_tma_ring(swiglu):
    """--stream-tma on: a producer warp more; its PTX has the TMA boxes of the gated
    first linear (Wg, Wu) and of W2 on the stages' full mbarriers (armed with the tile's
    bytes), the MMA warps' waits and one arrival a warp, the fence between the reduction's
    generic writes to the ring and the next row tile's TMA; the cross-block reduction as the
    cp.async kernel has it; no local memory."""
    tmp, model = swiglu
    out, _, k, facts, ptx = _compile(model, tmp / "tma", "--stream-tma", "on")
    assert k["weight_copy"] == "tma" and k["threads"] == 32 * (k["warps"] + 1), out
    assert k["mbar_offset"] % 8 == 0 and k["weight_smem_offset"] % 1024 == 0
    assert "(TMA from a producer warp)" in out
    assert len(re.findall(TMA_BOX, ptx)) == 3
    assert ptx.count("mbarrier.arrive.expect_tx.shared") == 2  # a W1 tile, a W2 tile
    assert "bar.arrive" not in ptx and "x_lead" not in k  # (--stream-x-first: below)
    assert ptx.count("mbarrier.init.shared") == 2 * k["weight_buffers"]
    assert "mbarrier.try_wait.parity" in ptx and "fence.proxy.async.shared::cta" in ptx
    assert ptx.count("mma.sync.aligned.m16n8k16") > 0 and "ldmatrix" in ptx
    assert ptx.count("fence.acq_rel.gpu") == 2 and len(re.findall(ARRIVE, ptx)) == 1
    assert re.search(WAIT + rf"{k['blocks']};", ptx)
    assert facts["sass_local"] == 0


def _waits_between_reads_and_release(ptx: str) -> list:
    """For each MMA warp's release of a stage (its arrival on the empty mbarrier): whether
    an mbarrier wait lies between the last ldmatrix before it and the arrival."""
    out = []
    for m in re.finditer(r"mbarrier\.arrive\.shared", ptx):
        before = ptx[: m.start()]
        out.append("mbarrier.try_wait.parity" in before[before.rfind("ldmatrix") :])
    return out


def test_tma_ring_x_first(swiglu):
    """--stream-x-first on: the producer issues its first x_lead tiles (W1's: Wg, Wu, armed
    as one tile), waits on a named barrier until every MMA thread has arrived there with X
    in shared memory, then issues the rest (Wg, Wu; W2); auto leaves it out."""
    tmp, model = swiglu
    out, _, k, facts, ptx = _compile(
        model, tmp / "tma-xfirst", "--stream-tma", "on", "--stream-x-first", "on"
    )
    assert k["weight_copy"] == "tma" and k["x_lead"] == 2, out
    assert len(re.findall(TMA_BOX, ptx)) == 2 + 3
    assert ptx.count("mbarrier.arrive.expect_tx.shared") == 1 + 2
    threads = k["threads"]
    assert ptx.count(f"bar.sync \t2, {threads};") == 1, threads
    assert ptx.count(f"bar.arrive 2, {threads};") == 1
    assert facts["sass_local"] == 0


def test_tma_ring_planted_no_wait(swiglu):
    """stream-ring-no-wait chooses the TMA ring and moves the MMA warps' waits on the full
    mbarriers after their reads of the stage (before they give it back, so no copy is in
    flight when it is refilled or the block exits): as many waits, the arrivals too, but a
    wait between the reads and each release where the correct build has none."""
    tmp, model = swiglu
    *_, good = _compile(model, tmp / "tma-good", "--stream-tma", "on")
    _, _, k, _, ptx = _compile(model, tmp / "tma-nowait", "--plant-fault", "stream-ring-no-wait")
    assert k["weight_copy"] == "tma" and k["fault"] == "stream_ring_no_wait"
    assert ptx.count("mbarrier.try_wait.parity") == good.count("mbarrier.try_wait.parity") > 0
    assert ptx.count("mbarrier.arrive.shared") == good.count("mbarrier.arrive.shared") > 0
    late, on_time = _waits_between_reads_and_release(ptx), _waits_between_reads_and_release(good)
    assert late and all(late) and on_time and not any(on_time), (late, on_time)
    assert len(re.findall(TMA_BOX, ptx)) == len(re.findall(TMA_BOX, good)) > 0


def test_tma_checking_build_poisons_the_ring_and_delays_the_producer(swiglu):
    """A checking build with the TMA ring starts every launch with the ring as fp16 NaN
    (generic stores fenced against the async proxy before the first barrier) and delays the
    producer's boxes, so a warp that reads a stage without its wait sees NaN rather than
    the previous launch's equal weights; the plain build has neither."""
    tmp, model = swiglu
    *_, plain = _compile(model, tmp / "tma-plain", "--stream-tma", "on")
    opts = ("--schedule", "chain-stream", "--check-delay", 200000)
    _, _, k, _, ptx = _compile(model, tmp / "tma-chk", "--stream-tma", "on", *opts)
    nan = re.compile(r"st\.shared\.(?:b32|u32|s32)\s+\[[^]]+\],\s*(?:2113961472|0x7E007E00)")
    assert k["check_delay"] == 200000 and nan.search(ptx) and not nan.search(plain)
    fences = ptx.count("fence.proxy.async.shared::cta")
    assert fences == plain.count("fence.proxy.async.shared::cta") + 1
    assert "clock64" in ptx and "clock64" not in plain
    # the fence comes before the first barrier of the block
    assert ptx.index("fence.proxy.async.shared::cta") < ptx.index("bar.sync")


@pytest.mark.parametrize("kind", ["llama_ffn", "gpt2_ffn"])
def test_wide_x_streams_beside_w1_in_one_row_tile(tmp_path, kind):
    """At 43 rows X 2048 wide does not fit beside the ring in a 64-row tile: with the wide
    forms the cp.async plan streams X's chunks beside W1 (the norm's statistics from X in
    global memory, the norm applied in registers), so the weights stream once; the TMA ring
    keeps X resident in 32-row tiles, so auto takes cp.async there. auto leaves the wide
    forms out until they are checked on a GPU."""
    model = _model(tmp_path, kind, 2048, 1024)
    _, _, k0, _, _ = _compile(model, tmp_path / "auto", "--rows", 43)
    assert "x_stream" not in k0 and k0["tile_rows"] == 32
    _, plan, k, facts, ptx = _compile(model, tmp_path / "wide", "--rows", 43, "--stream-wide", "on")
    assert k["mode"] == "chain_stream" and k["x_stream"] is True
    assert k["tile_rows"] == 64 and k["weight_copy"] == "cp_async" and k["weight_buffers"] >= 4
    assert k["local_ops"] == 0  # no spills
    assert "mma.sync.aligned.m16n8k16" in ptx and "cp.async" in ptx
    # the norm's statistics: a butterfly reduction per row, as the resident X's
    assert "shfl.sync.bfly" in ptx
    _, _, t, _, _ = _compile(
        model, tmp_path / "tma", "--rows", 43, "--stream-tma", "on", "--stream-wide", "on"
    )
    assert "x_stream" not in t and t["tile_rows"] == 32


def test_tma_ring_refused_where_it_cannot_stride(tmp_path):
    model = _model(tmp_path, "gpt2_ffn", 128, 500)
    p = rowfuse(
        "compile", model, "--rows", 4, "-o", tmp_path / "x", "--schedule", "chain-stream",
        "--stream-tma", "on",
    )  # fmt: skip
    assert p.returncode != 0 and "multiples of 8" in p.stderr, p.stderr


def test_schedule_chain_keeps_chain_mma(swiglu):
    tmp, model = swiglu
    out, plan, k, _, ptx = _compile(model, tmp / "mma", "--schedule", "chain")
    assert plan["schedule"] == "chain" and k["mode"] == "chain_mma"
    assert "fence.acq_rel.gpu" not in ptx


@pytest.mark.parametrize("fault", ["stream-no-fence", "stream-early-reduce", "stream-no-reset"])
def test_planted_faults_change_the_reduction(swiglu, fault):
    tmp, model = swiglu
    _, plan, k, _, ptx = _compile(model, tmp / fault, "--plant-fault", fault)
    assert k["fault"] == fault.replace("-", "_")
    B = k["blocks"]
    if fault == "stream-no-fence":
        assert "fence.acq_rel.gpu" not in ptx and "ld.acquire" not in ptx
        assert re.search(WAIT.replace("acquire", "relaxed") + rf"{B};", ptx)
    else:
        assert ptx.count("fence.acq_rel.gpu") == 2 and len(re.findall(ARRIVE, ptx)) == 1
    if fault == "stream-early-reduce":
        # the reducers wait for blocks - 1 arrivals, not blocks
        assert re.search(WAIT + rf"{B - 1};", ptx) and not re.search(WAIT + rf"{B};", ptx)
    else:
        assert re.search(WAIT.replace("acquire", "(?:acquire|relaxed)") + rf"{B};", ptx)
    # the last reader resets both counters, or (stream-no-reset) the read counter only
    assert re.search(READ + rf"{B - 1};", ptx)
    assert len(re.findall(EXCH, ptx)) == (1 if fault == "stream-no-reset" else 2)


def test_fault_refused_with_schedule_chain(swiglu):
    tmp, model = swiglu
    p = rowfuse(
        "compile", model, "--rows", 4, "-o", tmp / "x", "--schedule", "chain",
        "--plant-fault", "stream-no-fence",
    )  # fmt: skip
    assert p.returncode != 0 and "planted in the chain_stream kernel" in p.stderr


def test_forced_gelu_ffn(tmp_path):
    model = _model(tmp_path, "gpt2_ffn", 128, 512)
    out, plan, k, _, ptx = _compile(model, tmp_path / "pkg", "--schedule", "chain-stream")
    assert k["mode"] == "chain_stream" and "forced" in out and k["norm"] == 0
    assert plan["chain"]["stages"][0]["kind"] == "layernorm"
    assert ptx.count("fence.acq_rel.gpu") == 2 and "mma.sync.aligned" in ptx


def test_checking_build_spins_before_the_partial_stores(tmp_path):
    """--check-delay with --schedule chain-stream: the kernel entry carries it, the PTX
    spins that many clocks (only there: the plain build has no clock loop), and `rowfuse
    bench --c` refuses the package before it looks for a GPU (its time would be the
    spins'); without --schedule chain-stream the option is refused naming it."""
    model = _model(tmp_path, "gpt2_ffn", 128, 512)
    _, _, plain, _, plain_ptx = _compile(model, tmp_path / "plain", "--schedule", "chain-stream")
    assert "check_delay" not in plain and "clock64" not in plain_ptx
    _, plan, k, _, ptx = _compile(
        model, tmp_path / "chk", "--schedule", "chain-stream", "--check-delay", 123457
    )
    assert k["check_delay"] == 123457 and "clock64" in ptx
    assert re.search(r"setp\.lt\.s64\s+%p\d+, %rd\d+, 123457;", ptx)
    p = rowfuse("bench", tmp_path / "chk", "--c", "--rows", 4, check=None)
    assert p.returncode != 0
    assert "checking build" in p.stderr and "--check-delay 123457" in p.stderr, p.stderr
    p = rowfuse("compile", model, "--rows", 4, "--check-delay", 100, "-o", tmp_path / "no")
    assert p.returncode != 0 and "--schedule chain-stream" in p.stderr, p.stderr


def test_torch_block_sizes_the_stream_scratch_as_the_compiler(tmp_path):
    """rowfuse.torch gives a streaming package's launch the scratch the compiler's rule
    (rf_chain_stream_scratch_bytes in librowfuse) asks for, at row counts that fill, split
    and leave partial row tiles, in a plain and a timeline build (whose row tiles also hold
    every block's stamps)."""
    import ctypes

    from rowfuse.capi import clib
    from rowfuse.torch import stream_scratch_bytes

    model = _model(tmp_path, "gpt2_ffn", 128, 512)
    f = clib.lib().rf_chain_stream_scratch_bytes
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int64]
    for build in ((), ("--timeline",)):
        out = tmp_path / f"pkg{len(build)}"
        _, _, k, _, _ = _compile(model, out, "--schedule", "chain-stream", *build)
        per_tile = k["scratch_counters_per_tile"]
        assert per_tile == 2 + (k["blocks"] * 8 if build else 0)
        for rows in (1, 4, k["tile_rows"], k["tile_rows"] + 1, 3 * k["tile_rows"] - 5):
            want = f(k["blocks"], k["out_width"], rows, k["tile_rows"], per_tile)
            assert stream_scratch_bytes(k, rows) == want > 0


def test_plant_fault_list_names_chain_stream():
    p = rowfuse("compile", "--plant-fault", "list")
    lines = [ln.split("\t") for ln in p.stdout.splitlines()]
    assert ["stream-no-fence", "chain-stream"] == lines[-5][:2]
    assert ["stream-early-reduce", "chain-stream"] == lines[-4][:2]
    assert ["stream-no-reset", "chain-stream"] == lines[-3][:2]
    assert ["stream-ring-no-wait", "chain-stream"] == lines[-2][:2]
    assert ["conv-no-store", "chain-conventional"] == lines[-1][:2]


def test_timeline_build_stamps_every_phase(tmp_path):
    """`--timeline` builds the streaming kernel with the global timer's low word stored at
    each phase of a row tile (seven stamps, thread 0) after the tile's counters, and sizes
    the scratch for them; a plan that is not the streaming kernel refuses it."""
    model = _model(tmp_path, "llama_ffn", 512, 2048)
    *_, plain = _compile(model, tmp_path / "plain")
    _, plan, k, _, ptx = _compile(model, tmp_path / "tl", "--timeline")
    assert k["timeline"] is True and k["stamps"] == 8
    assert k["scratch_counters_per_tile"] == 2 + k["blocks"] * 8
    stamps = ptx.count("%globaltimer_lo")
    assert stamps - plain.count("%globaltimer_lo") == 7, (stamps, plain.count("%globaltimer_lo"))
    p = rowfuse(
        "compile", model, "--rows", 4, "-o", tmp_path / "mma", "--schedule", "chain", "--timeline"
    )
    assert p.returncode != 0 and "--timeline" in p.stderr, p.stderr


def test_timeline_reader_unwraps_and_summarizes():
    """The reader's stamps and spans in closed form: two blocks, one row tile, the low
    timer word wrapping between them."""
    from rowfuse.bench import timeline

    rows, blocks, stamps = 3, 2, 8
    k = {
        "blocks": blocks,
        "stamps": stamps,
        "tile_rows": 16,
        "scratch_partial_per_row": 5,
        "scratch_counters_per_tile": 2 + blocks * stamps,
    }
    words = np.zeros(rows * 5 + 2 + blocks * stamps, np.int64)
    t0 = (1 << 32) - 3000  # the low word wraps 3 us after block 0 starts
    # block 0: start, x, hidden, partials, arrived, all arrived, done (ns after t0)
    b0 = [0, 1000, 5000, 9000, 9500, 20000, 22000, 0]
    b1 = [500, 1500, 7000, 19000, 19500, 20000, 23000, 0]
    for b, st in enumerate((b0, b1)):
        for i, v in enumerate(st):
            words[rows * 5 + 2 + b * stamps + i] = (t0 + v) % (1 << 32)
    scratch = words.astype(np.uint32).view(np.int32)
    t = timeline.stamps_of(scratch, k, rows)
    assert t.shape == (1, 2, 7)
    assert list(t[0, 0]) == b0[:7] and list(t[0, 1]) == b1[:7]
    (s,) = timeline.summarize(t)
    assert s["launch_us"] == 23.0
    assert s["stream_us"] == [9.0, 13.75, 18.5]
    assert s["wait_us"] == [0.5, 5.5, 10.5]
    assert s["tail_us"] == 23.0 - 14.0
