"""CuTe DSL kernels for the rowfuse residual MLP block.

    H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)

One generic kernel generator, `MlpKernel`, is specialised at build time (all shapes but
the row count are compile-time constants) into the kernels of the three schedules:

- mode "fused_smem"  (persistent-smem): one launch; H stays in shared memory.
- mode "fused_gmem"  (persistent-gmem): one launch; H goes to the global h buffer and is
  read back by the same block (block barrier only: each block reads its own rows).
- mode "proj1" + "proj2" (conventional): two launches through the global h buffer.

Every block loops over row tiles (tile = `tile_rows` rows, grid-stride over tiles). The
hidden dimension is processed in chunks of `hc` columns: when W1 and W2 fit in shared
memory together there is one chunk and the weights are staged once per block; otherwise
they are streamed chunk by chunk, double-buffered with cp.async, and each chunk of H is
rounded to fp16 in shared memory and multiplied straight into the Y accumulator.
When the weights are one chunk, `x_prefetch` double-buffers X across a block's tiles (the
next tile's X streams in during this one) and `split_w2` puts W2/b2 in their own cp.async
group, awaited only before GEMM2 of the block's first tile. Every one of these choices
is made by the C planner (src/compile) and arrives in the kernel specification; this
module decides nothing.

Shared memory tiles are zero-padded to multiples of the MMA shape (rows to 16, channels
and hidden to 16 * warps_n), with the row stride padded by 16 bytes so that ldmatrix is
free of bank conflicts. Global memory is only read inside [rows, C] / [C, H] / [H, C].
Tensor cores: warp-level mma.sync m16n8k16 (f16 inputs, f32 accumulators) fed by
ldmatrix (transposed for the N-major weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warp

from rowfuse.capi.names import KERNEL_MODES as MODES

DEBUG = False


def _vec_elems(cols: int, elem_bytes: int) -> int:
    """Widest cp.async vector (4, 8 or 16 bytes) that divides a row of `cols` elements;
    0 when rows are not even 4-byte multiples (then plain loads are used)."""
    for nbytes in (16, 8, 4):
        if (cols * elem_bytes) % nbytes == 0 and nbytes >= elem_bytes:
            return nbytes // elem_bytes
    return 0


# An mbarrier wait longer than this traps (the launch fails with an error) instead of
# hanging the GPU: a wrong TMA byte count or a lost arrive would otherwise never return.
WATCHDOG_NS = 20_000_000_000


class SpecError(ValueError):
    """A kernel specification that is incomplete or inconsistent."""


# The kernel modes whose code has each planted fault's site (src/compile/plan.c's table):
# a spec that plants one elsewhere is refused, so a kernel without the site is never
# counted as carrying the fault. conventional has no barrier between H's store and GEMM2
# (H crosses global memory between its two launches). Launcher faults ("stream_*") sit in
# the shim and leave every kernel's code unchanged.
FAULT_SITES = {
    "no_barrier": ("fused_smem", "fused_gmem"),
    "no_pad": ("fused_smem", "fused_gmem", "proj1", "proj2"),
    "no_relu": ("fused_smem", "fused_gmem", "proj1"),
}


@cute.jit
def check_spin(cycles: cutlass.Constexpr):
    """A checking build's delay (rowfuse compile --check-delay): spins `cycles` SM clocks,
    so the copies this thread issues next land late and a read that skips its wait sees
    the check's poison instead of the data."""
    t0 = cute.arch.clock64()
    now = t0
    while now - t0 < cycles:
        now = cute.arch.clock64()


@dataclass(frozen=True)
class Plan:
    """Compile-time geometry of one kernel, exactly as the C planner specified it
    (src/compile/tiling.c decides every field; kernel_spec.json carries them here)."""

    name: str
    mode: str
    channels: int
    hidden: int
    tile_rows: int
    warps_m: int
    warps_n: int
    cp: int  # padded channels
    hp: int  # padded hidden
    hc: int  # hidden chunk (multiple of 16 * warps_n, divides hp)
    nbuf: int  # weight buffers (1 when everything fits, else 2)
    smem_bytes: int
    smem_pad: int  # fp16 elements added to every shared-memory row (bank conflicts)
    x_prefetch: bool = False  # double-buffer X across a block's tiles (weights staged once)
    split_w2: bool = False  # W2/b2 in their own cp.async group, awaited only before GEMM2
    y_vec2: bool = False  # epilogue stores Y as 8-byte pairs (C even; fused / proj2 only)
    # fused_smem with x_prefetch: 3 X buffers and 2 H buffers, so that no barrier is needed
    # at the end of a tile (2 barriers per tile instead of 3)
    ring: bool = False
    min_blocks: int = 0  # > 0: ask ptxas for registers that fit this many blocks per SM
    # tests only: "no_barrier" drops the barrier between H's store and GEMM2, "no_pad"
    # leaves the zero padding of partial tiles unwritten, "no_relu" drops H's ReLU
    fault: str = ""
    # a checking build: the odd warps spin this many cycles before each staging (0 = none)
    check_delay: int = 0

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def nchunks(self) -> int:
        return self.hp // self.hc

    @classmethod
    def from_spec(cls, k: dict, smem_pad: int) -> Plan:
        """The plan of one kernel_spec.json kernel entry; SpecError naming a missing or
        inconsistent field (the generator checks the spec, it does not repair it)."""
        try:
            plan = cls(
                name=k["name"],
                mode=k["mode"],
                channels=k["channels"],
                hidden=k["hidden"],
                tile_rows=k["tile_rows"],
                warps_m=k["warps_m"],
                warps_n=k["warps_n"],
                cp=k["padded_channels"],
                hp=k["padded_hidden"],
                hc=k["hidden_chunk"],
                nbuf=k["weight_buffers"],
                smem_bytes=k["smem_bytes"],
                smem_pad=smem_pad,
                x_prefetch=bool(k["x_prefetch"]),
                split_w2=bool(k["split_w2"]),
                y_vec2=bool(k["y_vec2"]),
                ring=bool(k["ring"]),
                min_blocks=k["min_blocks"],
                fault=k.get("fault", ""),
                check_delay=k.get("check_delay", 0),
            )
        except KeyError as e:
            raise SpecError(f"kernel {k.get('name', '?')}: field {e} missing") from None
        launcher = plan.fault.startswith("stream_")
        if plan.fault and not launcher and plan.mode not in FAULT_SITES.get(plan.fault, ()):
            raise SpecError(f"{plan.name}: fault '{plan.fault}' has no site in mode {plan.mode}")
        step = 16 * plan.warps_n
        if plan.mode not in MODES or plan.mode == "fused_wgmma":
            raise SpecError(f"{plan.name}: unknown mode '{plan.mode}' for the mma.sync kernels")
        if plan.tile_rows != 16 * plan.warps_m or plan.cp % step or plan.hp % plan.hc:
            raise SpecError(f"{plan.name}: tile rows, warps and padded extents disagree")
        if plan.hc % step or plan.cp < plan.channels or plan.hp < plan.hidden:
            raise SpecError(f"{plan.name}: hidden chunk or padding does not cover the shape")
        return plan


def mma_sync_tiled(warps_m: int, warps_n: int):
    """The tiled mma.sync m16n8k16 (fp16 operands, fp32 accumulators) over warps_m x warps_n
    warps, 16 x 16 of the tile per warp, and its ldmatrix copies of A (rows of K) and of B
    (transposed: W is stored K-major rows of N)."""
    f16 = cutlass.Float16
    op = warp.MmaF16BF16Op(f16, cutlass.Float32, (16, 8, 16))
    tiled_mma = cute.make_tiled_mma(
        op,
        cute.make_layout((warps_m, warps_n, 1)),
        permutation_mnk=(warps_m * 16, warps_n * 16, 16),
    )
    s2r_a = cute.make_tiled_copy_A(
        cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), f16), tiled_mma
    )
    s2r_b = cute.make_tiled_copy_B(
        cute.make_copy_atom(warp.LdMatrix8x8x16bOp(True, 4), f16), tiled_mma
    )
    return tiled_mma, s2r_a, s2r_b


def fake_tensor(dt, shape):
    """A row-major tensor of `shape` (its first extent may be a cute.SymInt), 16-byte
    aligned: the argument a kernel is compiled and exported for."""
    from cutlass.cute.runtime import make_fake_compact_tensor  # noqa: PLC0415

    order = tuple(range(len(shape) - 1, -1, -1))
    return make_fake_compact_tensor(dt, shape, stride_order=order, assumed_align=16)


class TileOps:
    """The tile helpers the mma.sync generators share (MlpKernel here, the chain generator
    in chain_mma.py): zero-padded global -> shared staging and the ldmatrix + mma.sync
    k loop. A subclass sets `threads` (the block's threads) and `fault` ("" or a planted
    fault of the tests), and may set `check_delay` (a checking build's spin, in cycles)."""

    check_delay = 0

    @cute.jit
    def stage(
        self,
        g: cute.Tensor,
        s: cute.Tensor,
        row0,
        nrows,
        col0,
        ncols,
        srows: cutlass.Constexpr,
        scols: cutlass.Constexpr,
        vec: cutlass.Constexpr,
        tid,
        threads: cutlass.Constexpr = 0,
    ):
        """Copy g[row0 + r, col0 + c] (r < nrows, c < ncols) into s[r, c] for the padded
        smem tile [srows, scols]; everything outside is written as zero. Async (cp.async)
        when `vec` > 0, to be completed by the caller's commit/wait/barrier. The copying
        threads are tid 0 .. threads - 1 (0: the block's; a warp passes its lane and 32).
        In a checking build the odd warps first spin (check_spin), so their part lands late."""
        nthr = threads if threads else self.threads
        if cutlass.const_expr(self.check_delay > 0):
            if (tid // 32) % 2 == 1:
                check_spin(self.check_delay)
        if cutlass.const_expr(vec > 0):
            nvec_row = scols // vec
            total = srows * nvec_row
            atom = cute.make_copy_atom(
                cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL)
                if cutlass.const_expr(vec * g.element_type.width == 128)
                else cpasync.CopyG2SOp(),
                g.element_type,
                num_bits_per_copy=vec * g.element_type.width,
            )
            gv = cute.zipped_divide(g, (1, vec))
            sv = cute.zipped_divide(s, (1, vec))
            for i in cutlass.range_constexpr((total + nthr - 1) // nthr):
                v = tid + i * nthr
                if cutlass.const_expr((i + 1) * nthr <= total) or v < total:
                    r = v // nvec_row
                    cv = v - r * nvec_row
                    dst = cute.make_tensor(sv[(None, (r, cv))].iterator, cute.make_layout(vec))
                    if r < nrows and cv * vec < ncols:
                        src = cute.make_tensor(
                            gv[(None, (row0 + r, col0 // vec + cv))].iterator,
                            cute.make_layout(vec),
                        )
                        cute.copy(atom, src, dst)
                    else:
                        if cutlass.const_expr(self.fault != "no_pad"):
                            dst.fill(0)
        else:
            total = srows * scols
            for i in cutlass.range_constexpr((total + nthr - 1) // nthr):
                v = tid + i * nthr
                if cutlass.const_expr((i + 1) * nthr <= total) or v < total:
                    r = v // scols
                    c = v - r * scols
                    if cutlass.const_expr(self.fault == "no_pad"):
                        if r < nrows and c < ncols:
                            s[r, c] = g[row0 + r, col0 + c]
                    else:
                        val = g.element_type(0)
                        if r < nrows and c < ncols:
                            val = g[row0 + r, col0 + c]
                        s[r, c] = val

    @cute.jit
    def stage_vec(
        self,
        g: cute.Tensor,
        s: cute.Tensor,
        col0,
        n: cutlass.Constexpr,
        sn: cutlass.Constexpr,
        vec: cutlass.Constexpr,
        tid,
    ):
        """1-D variant for the fp32 biases: s[c] = g[col0 + c] for c < n, else 0."""
        g2 = cute.make_tensor(g.iterator, cute.make_layout((1, n), stride=(0, 1)))
        s2 = cute.make_tensor(s.iterator, cute.make_layout((1, sn), stride=(0, 1)))
        self.stage(g2, s2, 0, 1, col0, n, 1, sn, vec, tid)

    @cute.jit
    def mma_ra(self, tiled_mma, thr_mma, thr_s2r_b, tCrA, sB, acc):
        """acc += A @ sB (N, K)^T with A already in registers (tCrA, the MMA's A fragment of
        the whole K): ldmatrix of B + mma.sync, k-block by k-block."""
        tCsB = thr_mma.partition_B(sB)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        tCsB_v = thr_s2r_b.partition_S(sB)
        tCrB_v = thr_s2r_b.retile(tCrB)
        for k in cutlass.range_constexpr(cute.size(tCrB, mode=[2])):
            cute.copy(thr_s2r_b, tCsB_v[None, None, k], tCrB_v[None, None, k])
            cute.gemm(tiled_mma, acc, tCrA[None, None, k], tCrB[None, None, k], acc)

    @cute.jit
    def mma(self, tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, sA, sB, acc):
        """acc += sA (M, K) @ sB (N, K)^T with ldmatrix + mma.sync, k-block by k-block."""
        tCsA = thr_mma.partition_A(sA)
        tCsB = thr_mma.partition_B(sB)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCrB = tiled_mma.make_fragment_B(tCsB)
        tCsA_v = thr_s2r_a.partition_S(sA)
        tCrA_v = thr_s2r_a.retile(tCrA)
        tCsB_v = thr_s2r_b.partition_S(sB)
        tCrB_v = thr_s2r_b.retile(tCrB)
        nk = cute.size(tCrA, mode=[2])
        for k in cutlass.range_constexpr(nk):
            cute.copy(thr_s2r_a, tCsA_v[None, None, k], tCrA_v[None, None, k])
            cute.copy(thr_s2r_b, tCsB_v[None, None, k], tCrB_v[None, None, k])
            cute.gemm(tiled_mma, acc, tCrA[None, None, k], tCrB[None, None, k], acc)


class MlpKernel(TileOps):
    """Generates one kernel of the block for a `Plan` (see module docstring)."""

    def __init__(self, plan: Plan):
        self.p = plan
        self.mode = plan.mode
        self.C, self.H = plan.channels, plan.hidden
        self.tm = plan.tile_rows
        self.cp, self.hp, self.hc = plan.cp, plan.hp, plan.hc
        self.nbuf, self.nchunks = plan.nbuf, plan.nchunks
        self.threads = plan.threads
        self.pad = plan.smem_pad
        self.fault = plan.fault  # a planted fault, for tests of the gates only
        self.check_delay = plan.check_delay
        self.uses_w1 = self.mode in ("fused_smem", "fused_gmem", "proj1")
        self.uses_w2 = self.mode in ("fused_smem", "fused_gmem", "proj2")
        self.xpf = plan.x_prefetch
        self.split = plan.split_w2
        self.yv2 = plan.y_vec2
        self.ring = plan.ring
        self.vx = _vec_elems(self.C, 2)
        self.vh = _vec_elems(self.H, 2)
        self.vb1 = _vec_elems(self.H, 4)
        self.vb2 = _vec_elems(self.C, 4)

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(
        self,
        mX: cute.Tensor,
        mW1: cute.Tensor,
        mB1: cute.Tensor,
        mW2: cute.Tensor,
        mB2: cute.Tensor,
        mH: cute.Tensor,
        mY: cute.Tensor,
        rows: cutlass.Int32,
        grid: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        p = self.p
        extra = {}
        if cutlass.const_expr(p.min_blocks > 0):
            # (a carveout given, so the DSL does not ask a GPU for the smem per SM)
            extra = {"min_blocks_per_mp": p.min_blocks, "preferred_smem_carveout": 100}
        self.kernel(mX, mW1, mB1, mW2, mB2, mH, mY, rows).launch(
            grid=(grid, 1, 1),
            block=(self.threads, 1, 1),
            smem=p.smem_bytes,
            stream=stream,
            **extra,
        )

    # ------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(
        self,
        mX: cute.Tensor,
        mW1: cute.Tensor,
        mB1: cute.Tensor,
        mW2: cute.Tensor,
        mB2: cute.Tensor,
        mH: cute.Tensor,
        mY: cute.Tensor,
        rows: cutlass.Int32,
    ):
        tm, cp, hc, C, H = self.tm, self.cp, self.hc, self.C, self.H
        nchunks, mode = self.nchunks, self.mode

        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()

        # ---------------- shared memory (row stride padded by 16 bytes)
        sXall, sHall, sW1, sB1, sW2, sB2 = self.alloc_smem()

        # ---------------- MMA partitions and ldmatrix copies
        tiled_mma, s2r_a, s2r_b = mma_sync_tiled(self.p.warps_m, self.p.warps_n)
        thr_mma = tiled_mma.get_slice(tid)
        thr_s2r_a = s2r_a.get_slice(tid)
        thr_s2r_b = s2r_b.get_slice(tid)

        # coordinates of this thread's accumulator elements
        cHc = cute.make_identity_tensor((tm, hc))
        tCcH = thr_mma.partition_C(cHc)
        cY = cute.make_identity_tensor((tm, cp))
        tCcY = thr_mma.partition_C(cY)

        ntiles = (rows + tm - 1) // tm
        if cutlass.const_expr(DEBUG):
            cute.printf("tCcH {} tCcY {}", tCcH, tCcY)

        self.prologue(mX, mW1, mB1, mW2, mB2, sXall, sW1, sB1, sW2, sB2, rows, ntiles, bid, tid)

        for tile in cutlass.range(bid, ntiles, nblk):
            row0 = tile * tm
            nrows = rows - row0
            # X tile (A of GEMM1, residual of the epilogue)
            hb = 0
            if cutlass.const_expr(self.xpf):
                xb = ((tile - bid) // nblk) % 2
                xn = 1 - xb
                if cutlass.const_expr(self.ring):
                    # the buffers written here (X of the next tile, H of this one) were
                    # last read two tiles ago: every warp is past this tile's first barrier
                    xb = ((tile - bid) // nblk) % 3
                    xn = (xb + 1) % 3
                    hb = ((tile - bid) // nblk) % 2
                sX = sXall[None, None, xb]
                nxt = tile + nblk
                if nxt < ntiles:
                    self.stage(
                        mX,
                        sXall[None, None, xn],
                        nxt * tm,
                        rows - nxt * tm,
                        0,
                        C,
                        tm,
                        cp,
                        self.vx,
                        tid,
                    )
                cute.arch.cp_async_commit_group()  # (empty on the block's last tile)
            else:
                sX = sXall[None, None, 0]
                self.stage(mX, sX, row0, nrows, 0, C, tm, cp, self.vx, tid)
                if cutlass.const_expr(mode == "proj2" and nchunks == 1):
                    self.stage(mH, sHall[None, None, 0], row0, nrows, 0, H, tm, hc, self.vh, tid)
                cute.arch.cp_async_commit_group()

            accY = None
            if cutlass.const_expr(mode != "proj1"):
                accY = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, cp)))
                accY.fill(0.0)
            first = tile == bid
            ctx = (tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, tCcH, row0, nrows, tid, first)

            self.hidden_loop(ctx, mW1, mW2, mH, sX, sW1, sB1, sW2, sHall, accY, hb)

            if cutlass.const_expr(mode != "proj1"):
                self.epilogue(mY, accY, tCcY, sX, sB2, row0, nrows)
            # sX / sH are rewritten by the next tile (not with the ring: see above)
            if cutlass.const_expr(not self.ring):
                cute.arch.sync_threads()

    def alloc_smem(self):
        """The block's shared-memory tensors (plain Python, run while the kernel is traced):
        X tile(s), H tile(s), W1 chunk(s) + b1, W2 chunk(s) + b2; None for those the mode
        does not use. The spec's smem_bytes counts exactly these (src/compile/tiling.c)."""
        tm, cp, hp, hc, nbuf, pad = self.tm, self.cp, self.hp, self.hc, self.nbuf, self.pad
        f16, f32 = cutlass.Float16, cutlass.Float32
        smem = cutlass.utils.SmemAllocator()
        # X tile; double-buffered when the weights are staged once (the next tile's X
        # streams in while this one is computed), three buffers with the ring
        nxb = 3 if self.ring else (2 if self.xpf else 1)
        sXall = smem.allocate_tensor(
            f16, cute.make_layout((tm, cp, nxb), stride=(cp + pad, 1, tm * (cp + pad))), 16
        )
        sHall = sW1 = sB1 = sW2 = sB2 = None
        if self.mode != "proj1":
            hbufs = 2 if (self.mode == "proj2" and nbuf > 1) or self.ring else 1
            sHall = smem.allocate_tensor(
                f16, cute.make_layout((tm, hc, hbufs), stride=(hc + pad, 1, tm * (hc + pad))), 16
            )
        if self.uses_w1:
            # W1 chunk stored [K=cp][N=hc] (N contiguous); viewed as B = (N, K)
            sW1 = smem.allocate_tensor(
                f16, cute.make_layout((cp, hc, nbuf), stride=(hc + pad, 1, cp * (hc + pad))), 16
            )
            sB1 = smem.allocate_tensor(f32, cute.make_layout(hp), 16)
        if self.uses_w2:
            # W2 chunk stored [K=hc][N=cp]; viewed as B = (N, K)
            sW2 = smem.allocate_tensor(
                f16, cute.make_layout((hc, cp, nbuf), stride=(cp + pad, 1, hc * (cp + pad))), 16
            )
            sB2 = smem.allocate_tensor(f32, cute.make_layout(cp), 16)
        return sXall, sHall, sW1, sB1, sW2, sB2

    @cute.jit
    def prologue(self, mX, mW1, mB1, mW2, mB2, sXall, sW1, sB1, sW2, sB2, rows, ntiles, bid, tid):
        """Stages the weights once per block when they are one chunk (else the biases), the
        first X tile when prefetching, and W2 in its own group when split."""
        tm, cp, hp, hc, C, H = self.tm, self.cp, self.hp, self.hc, self.C, self.H
        if cutlass.const_expr(self.nchunks == 1):
            if cutlass.const_expr(self.uses_w1):
                self.stage(mW1, sW1[None, None, 0], 0, C, 0, H, cp, hc, self.vh, tid)
                self.stage_vec(mB1, sB1, 0, H, hp, self.vb1, tid)
            if cutlass.const_expr(self.uses_w2 and not self.split):
                self.stage(mW2, sW2[None, None, 0], 0, H, 0, C, hc, cp, self.vx, tid)
                self.stage_vec(mB2, sB2, 0, C, cp, self.vb2, tid)
        else:
            if cutlass.const_expr(self.uses_w1):
                self.stage_vec(mB1, sB1, 0, H, hp, self.vb1, tid)
            if cutlass.const_expr(self.uses_w2):
                self.stage_vec(mB2, sB2, 0, C, cp, self.vb2, tid)
        if cutlass.const_expr(self.xpf):
            if bid < ntiles:
                self.stage(
                    mX, sXall[None, None, 0], bid * tm, rows - bid * tm, 0, C, tm, cp, self.vx, tid
                )
        cute.arch.cp_async_commit_group()
        if cutlass.const_expr(self.split):
            # W2 and b2 stream in while the block's first GEMM1 runs
            self.stage(mW2, sW2[None, None, 0], 0, H, 0, C, hc, cp, self.vx, tid)
            self.stage_vec(mB2, sB2, 0, C, cp, self.vb2, tid)
            cute.arch.cp_async_commit_group()

    @cute.jit
    def hidden_loop(self, ctx, mW1, mW2, mH, sX, sw1, sb1, sw2, sh, accY, hb):
        """The hidden chunks of one row tile: wait for the staged operands, then each chunk
        (GEMM1, fp16 H, GEMM2 into accY), streaming the weights when they are chunked."""
        tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, tCcH, row0, nrows, tid, first = ctx
        nbuf, nchunks, mode = self.nbuf, self.nchunks, self.mode
        if cutlass.const_expr(nchunks == 1):
            if cutlass.const_expr(self.split):
                # first tile: W1 + X done, W2 and the next X may still be in flight
                if first:
                    cute.arch.cp_async_wait_group(2)
                else:
                    cute.arch.cp_async_wait_group(1)
            else:
                # all but the next tile's X (when prefetching)
                cute.arch.cp_async_wait_group(1 if self.xpf else 0)
            cute.arch.sync_threads()
            self.chunk(ctx, mH, sX, sw1, sb1, sw2, sh, accY, 0, 0, hb)
        elif cutlass.const_expr(nbuf == 2):
            # double buffer: chunk j+1 streams in while chunk j is computed
            self.load_chunk(
                mW1, mW2, mH, sw1, sw2, sh if mode == "proj2" else None, 0, 0, row0, nrows, tid
            )
            cute.arch.cp_async_commit_group()
            for j in cutlass.range(nchunks):
                buf = j % 2
                if j + 1 < nchunks:
                    self.load_chunk(
                        mW1,
                        mW2,
                        mH,
                        sw1,
                        sw2,
                        sh if mode == "proj2" else None,
                        j + 1,
                        1 - buf,
                        row0,
                        nrows,
                        tid,
                    )
                cute.arch.cp_async_commit_group()  # (empty on the last chunk)
                cute.arch.cp_async_wait_group(1)
                cute.arch.sync_threads()
                hbuf = buf if mode == "proj2" else 0
                self.chunk(ctx, mH, sX, sw1, sb1, sw2, sh, accY, j, buf, hbuf)
                # everyone is done with buffer `buf` before it is refilled
                cute.arch.sync_threads()
        else:
            # single buffer: load chunk j, compute it, then the next
            for j in cutlass.range(nchunks):
                self.load_chunk(
                    mW1,
                    mW2,
                    mH,
                    sw1,
                    sw2,
                    sh if mode == "proj2" else None,
                    j,
                    0,
                    row0,
                    nrows,
                    tid,
                )
                cute.arch.cp_async_commit_group()
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                self.chunk(ctx, mH, sX, sw1, sb1, sw2, sh, accY, j, 0, 0)
                cute.arch.sync_threads()

    @cute.jit
    def epilogue(self, mY, accY, tCcY, sX, sB2, row0, nrows):
        """Y = ReLU(acc + b2 + X) in fp32, stored only inside [rows, C]."""
        C, f32 = self.C, cutlass.Float32
        # ---- epilogue: Y = ReLU(acc + b2 + X), fp32, only inside [rows, C]
        if cutlass.const_expr(self.yv2):
            # accumulator values 2k, 2k+1 are (r, c), (r, c + 1) with c even (the
            # m16n8 C layout): one 8-byte store per pair; C even, so c < C covers
            # c + 1 too
            st2 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f32, num_bits_per_copy=64)
            mYv = cute.zipped_divide(mY, (1, 2))
            ypair = cute.make_rmem_tensor(cute.make_layout(2), f32)
            for k in cutlass.range_constexpr(cute.size(accY) // 2):
                r = tCcY[2 * k][0]
                c = tCcY[2 * k][1]
                for e in cutlass.range_constexpr(2):
                    ypair[e] = cute.arch.fmax(
                        accY[2 * k + e] + sB2[c + e] + sX[r, c + e].to(f32), f32(0.0)
                    )
                if r < nrows and c < C:
                    dst = cute.make_tensor(
                        mYv[(None, (row0 + r, c // 2))].iterator, cute.make_layout(2)
                    )
                    cute.copy(st2, ypair, dst)
        else:
            for i in cutlass.range_constexpr(cute.size(accY)):
                r = tCcY[i][0]
                c = tCcY[i][1]
                yv = cute.arch.fmax(accY[i] + sB2[c] + sX[r, c].to(f32), f32(0.0))
                if r < nrows and c < C:
                    mY[row0 + r, c] = yv

    @cute.jit
    def chunk(self, ctx, mH, sX, sW1, sB1, sW2, sHall, accY, j, buf, hbuf):
        """One hidden chunk j (weights in buffer `buf`, H tile in `hbuf`): GEMM1, +b1,
        ReLU, fp16 round into smem (or global h), then GEMM2 into accY."""
        tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, tCcH, row0, nrows, tid, first = ctx
        tm, cp, hc, H, mode = self.tm, self.cp, self.hc, self.H, self.mode
        f16, f32 = cutlass.Float16, cutlass.Float32
        if cutlass.const_expr(self.uses_w1):
            # ---- GEMM1 chunk: acc1[tm, hc] = X[tm, cp] @ W1[cp, chunk]
            sB = cute.make_tensor(
                sW1[None, None, buf].iterator,
                cute.make_layout((hc, cp), stride=(1, hc + self.pad)),
            )
            acc1 = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, hc)))
            acc1.fill(0.0)
            self.mma(tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, sX, sB, acc1)
            # ---- +b1, ReLU, round to fp16
            hfrag = cute.make_fragment_like(acc1, f16)
            for i in cutlass.range_constexpr(cute.size(acc1)):
                c = tCcH[i][1]
                if cutlass.const_expr(self.fault == "no_relu"):  # planted: H without ReLU
                    hfrag[i] = (acc1[i] + sB1[j * hc + c]).to(f16)
                else:
                    hfrag[i] = cute.arch.fmax(acc1[i] + sB1[j * hc + c], f32(0.0)).to(f16)
            if cutlass.const_expr(mode == "fused_smem"):
                cute.autovec_copy(hfrag, thr_mma.partition_C(sHall[None, None, hbuf]))
            else:
                # H to the global buffer (only inside [rows, H])
                for i in cutlass.range_constexpr(cute.size(acc1)):
                    r = tCcH[i][0]
                    c = tCcH[i][1]
                    if r < nrows and j * hc + c < H:
                        mH[row0 + r, j * hc + c] = hfrag[i]
            if cutlass.const_expr(mode == "fused_gmem"):
                # the block barrier makes this block's global H writes visible to the
                # block; read its own tile back (through L2, zero-padded)
                cute.arch.sync_threads()
                self.stage(
                    mH, sHall[None, None, 0], row0, nrows, j * hc, H - j * hc, tm, hc, self.vh, tid
                )
                cute.arch.cp_async_commit_group()
                cute.arch.cp_async_wait_group(0)
            if cutlass.const_expr(mode == "fused_smem" and self.split):
                if first:
                    cute.arch.cp_async_wait_group(1)  # W2, b2 (not the next X)
            if cutlass.const_expr(mode != "proj1" and self.fault != "no_barrier"):
                cute.arch.sync_threads()
        if cutlass.const_expr(self.uses_w2):
            # ---- GEMM2 chunk: accY[tm, cp] += H[tm, chunk] @ W2[chunk, cp]
            sB2v = cute.make_tensor(
                sW2[None, None, buf].iterator,
                cute.make_layout((cp, hc), stride=(1, cp + self.pad)),
            )
            self.mma(tiled_mma, thr_mma, thr_s2r_a, thr_s2r_b, sHall[None, None, hbuf], sB2v, accY)

    @cute.jit
    def load_chunk(
        self,
        mW1,
        mW2,
        mH,
        sW1,
        sW2,
        sHall,
        j,
        buf,
        row0,
        nrows,
        tid,
    ):
        hc, cp = self.hc, self.cp
        hn = self.H - j * hc  # valid hidden columns of chunk j (stage masks c < hn)
        if cutlass.const_expr(sW1 is not None):
            self.stage(mW1, sW1[None, None, buf], 0, self.C, j * hc, hn, cp, hc, self.vh, tid)
        if cutlass.const_expr(sW2 is not None):
            self.stage(mW2, sW2[None, None, buf], j * hc, hn, 0, self.C, hc, cp, self.vx, tid)
        if cutlass.const_expr(sHall is not None):
            self.stage(
                mH, sHall[None, None, buf], row0, nrows, j * hc, hn, self.tm, hc, self.vh, tid
            )


__all__ = ["MlpKernel", "Plan", "SpecError", "TileOps", "MODES"]
