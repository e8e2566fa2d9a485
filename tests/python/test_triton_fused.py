"""The Triton fused peer without a GPU: its configuration space (the rules that cut it,
>= 24 configurations at every development shape, the untuned default always in) and its
kernel source run by Triton's interpreter (TRITON_INTERPRET=1, on the CPU) at small shapes
with partial row blocks, padded channels and partial hidden chunks, for every row block and
hidden chunk the space holds there, each output held to rowfuse's one comparison rule
against the mixed-precision CPU reference (rowfuse.capi.clib). Triton ships with the pinned
torch; a missing Triton fails these tests."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from rowfuse.bench import harness as bench
from rowfuse.bench import triton_fused

DEV_SHAPES = bench.parse_shapes(bench.DEV_SHAPES)


@pytest.mark.parametrize("shape", DEV_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_space_at_every_development_shape(shape):
    rows, channels, hidden = shape
    kept, info = triton_fused.config_space(rows, channels, hidden)
    n_axes = 1
    for values in triton_fused.AXES.values():
        n_axes *= len(values)
    assert info["space"] == n_axes == 96
    assert info["kept"] == len(kept) >= 24
    assert info["kept"] + sum(info["pruned"].values()) == info["space"]
    assert len(set(kept)) == len(kept)
    assert triton_fused.default_config(rows, channels, hidden) in kept
    bc = triton_fused.block_c(channels)
    for cfg in kept:
        assert cfg.block_m >= 16 and cfg.block_h >= 16 and bc >= 16
        assert cfg.block_m <= max(16, 1 << (rows - 1).bit_length())
        assert cfg.block_h <= max(16, 1 << (hidden - 1).bit_length())
        assert cfg.block_m * bc <= triton_fused.ACC_REGS_MAX * 32 * cfg.num_warps


def test_space_rules_cut_what_they_say():
    # 49 rows: no 128-row block; hidden 96 in chunks of 128 is one chunk: 2 stages only;
    # 512 channels: a 128-row block would hold a 64k-float accumulator (spills at 8 warps).
    kept, _ = triton_fused.config_space(49, 48, 96)
    assert all(c.block_m <= 64 for c in kept)
    assert {c.num_stages for c in kept if c.block_h == 128} == {2}
    kept, info = triton_fused.config_space(8192, 512, 2048)
    assert all(c.block_m * 512 <= 128 * 32 * c.num_warps for c in kept)
    assert info["pruned"]["accumulator would spill"] > 0
    assert {c.block_m for c in kept} == {16, 32, 64}
    # a tiny shape collapses the space, the default stays
    kept, _ = triton_fused.config_space(1, 8, 8)
    assert triton_fused.default_config(1, 8, 8) in kept
    assert {(c.block_m, c.block_h) for c in kept} == {(16, 16)}


def test_block_c_pads_to_a_power_of_two():
    assert [triton_fused.block_c(c) for c in (1, 8, 16, 17, 48, 96, 512)] == [
        16,
        16,
        16,
        32,
        64,
        128,
        512,
    ]


_INTERPRET = textwrap.dedent(
    """
    import json, sys
    import torch
    from rowfuse.capi import clib
    from rowfuse.bench import triton_fused as tf
    out = []
    for rows, channels, hidden, seed in json.loads(sys.argv[1]):
        k = clib.mlp_case(rows, channels, hidden, seed)
        args = [torch.from_numpy(a) for a in (k.x, k.w1, k.b1, k.w2, k.b2)]
        kept, _ = tf.config_space(rows, channels, hidden)
        tiles = sorted({(c.block_m, c.block_h) for c in kept})  # warps/stages: no effect here
        for bm, bh in tiles:
            y = torch.full((rows, channels), float("nan"), dtype=torch.float32)
            tf.launch(tf.Config(bm, bh, 4, 2), *args, y)
            v = clib.compare(y.numpy(), k)
            out.append([rows, channels, hidden, bm, bh, v["passed"], v["rel_l2"], v["message"]])
        # the same input with b1 dropped must not pass: the comparison can see a wrong kernel
        y = torch.full((rows, channels), float("nan"), dtype=torch.float32)
        tf.launch(kept[0], args[0], args[1], torch.zeros_like(args[2]), args[3], args[4], y)
        v = clib.compare(y.numpy(), k)
        out.append([rows, channels, hidden, -1, -1, v["passed"], v["rel_l2"], "b1 dropped"])
    print(json.dumps(out))
    """
)


def test_kernel_in_the_interpreter_matches_the_reference():
    # partial row blocks (5, 33, 70 rows), channels padded (24 -> 32, 8 -> 16, 40 -> 64),
    # hidden chunks that do not divide (40, 72, 100)
    shapes = [(5, 16, 32, 1), (33, 24, 40, 2), (17, 8, 72, 3), (70, 40, 100, 4)]
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", _INTERPRET, json.dumps(shapes)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    tiles = [r for r in rows if r[3] > 0]
    faults = [r for r in rows if r[3] < 0]
    assert len(faults) == len(shapes)
    assert len(tiles) >= 3 * len(shapes)
    for m, c, h, bm, bh, passed, rel_l2, msg in tiles:
        assert passed, f"{m}x{c}x{h} BLOCK_M={bm} BLOCK_H={bh}: {msg}"
        assert rel_l2 < 1e-5, f"{m}x{c}x{h} BLOCK_M={bm} BLOCK_H={bh}: rel. L2 {rel_l2:.2e}"
    for m, c, h, *_rest in faults:
        assert not _rest[2], f"{m}x{c}x{h}: the kernel with b1 dropped passed the comparison"
