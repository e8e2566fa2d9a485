"""A plain hand-written Triton kernel for the residual MLP block: the Triton baseline.

    H = fp16(ReLU(X @ W1 + b1));  Y = ReLU(H @ W2 + b2 + X)
    X[M,C] fp16, W1[C,H] fp16, b1[H] f32, W2[H,C] fp16, b2[C] f32, Y[M,C] f32

Straightforward on purpose: one program owns BLOCK_M rows, loads its X tile once, walks
the hidden dimension in chunks (first projection, bias, ReLU, round to fp16, multiply
into the Y accumulator), then adds b2 and the residual and stores Y. Both projections
run in one kernel; no autotuning, block sizes picked by a simple rule of thumb.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _mlp_fused_kernel(
    x_ptr,
    w1_ptr,
    b1_ptr,
    w2_ptr,
    b2_ptr,
    y_ptr,
    M,
    C: tl.constexpr,
    H: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_C)
    row_ok = rows < M
    col_ok = cols < C
    x = tl.load(
        x_ptr + rows[:, None] * C + cols[None, :],
        mask=row_ok[:, None] & col_ok[None, :],
        other=0.0,
    )
    acc = tl.zeros((BLOCK_M, BLOCK_C), dtype=tl.float32)
    for h0 in range(0, H, BLOCK_H):
        hid = h0 + tl.arange(0, BLOCK_H)
        hid_ok = hid < H
        w1 = tl.load(
            w1_ptr + cols[:, None] * H + hid[None, :],
            mask=col_ok[:, None] & hid_ok[None, :],
            other=0.0,
        )
        b1 = tl.load(b1_ptr + hid, mask=hid_ok, other=0.0)
        h = tl.maximum(tl.dot(x, w1) + b1[None, :], 0.0).to(tl.float16)
        w2 = tl.load(
            w2_ptr + hid[:, None] * C + cols[None, :],
            mask=hid_ok[:, None] & col_ok[None, :],
            other=0.0,
        )
        acc = tl.dot(h, w2, acc)
    b2 = tl.load(b2_ptr + cols, mask=col_ok, other=0.0)
    y = tl.maximum(acc + b2[None, :] + x.to(tl.float32), 0.0)
    tl.store(y_ptr + rows[:, None] * C + cols[None, :], y, mask=row_ok[:, None] & col_ok[None, :])


def _pow2_at_least(n: int, lo: int) -> int:
    return max(lo, triton.next_power_of_2(n))


def block_sizes(rows: int, channels: int, hidden: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_C, BLOCK_H, num_warps, num_stages) for a shape.

    tl.dot needs every dim >= 16; wide channels get a narrower hidden chunk and two
    pipeline stages so the W1/W2 chunks fit in shared memory."""
    block_c = _pow2_at_least(channels, 16)
    wide = block_c >= 256
    block_h = min(32 if wide else 64, _pow2_at_least(hidden, 16))
    block_m = 16 if rows <= 64 or block_c >= 512 else (32 if wide else 64)
    num_warps = 8 if wide else 4
    num_stages = 2 if wide else 3
    return block_m, block_c, block_h, num_warps, num_stages


def mlp_fused(x, w1, b1, w2, b2, y) -> None:
    """Enqueues the fused kernel on torch's current stream; writes y in place."""
    rows, channels = x.shape
    hidden = w1.shape[1]
    bm, bc, bh, warps, stages = block_sizes(rows, channels, hidden)
    grid = (triton.cdiv(rows, bm),)
    _mlp_fused_kernel[grid](
        x,
        w1,
        b1,
        w2,
        b2,
        y,
        rows,
        C=channels,
        H=hidden,
        BLOCK_M=bm,
        BLOCK_C=bc,
        BLOCK_H=bh,
        num_warps=warps,
        num_stages=stages,
    )


@triton.jit
def _empty_kernel():
    pass


def empty() -> None:
    """Enqueues one empty kernel (the floor) on torch's current stream."""
    _empty_kernel[(1,)]()
