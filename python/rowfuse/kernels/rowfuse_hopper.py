"""CuTe DSL kernel for the rowfuse residual MLP block on Hopper (sm_90a): wgmma + TMA.

    H = fp16(ReLU(X @ W1 + b1));   Y = ReLU(H @ W2 + b2 + X)

Mode "fused_wgmma" (schedule persistent-wgmma). Every geometry field arrives in the
kernel specification, decided by the C planner (src/compile/tiling_hopper.c); this module
decides nothing. One persistent block owns whole row tiles of `tile_rows` rows (64 per
consumer warpgroup along M) from the first projection to the last:

- TMA (cp.async.bulk.tensor) loads the X tile into an `x_stages`-deep ring and the
  hidden chunks (W1[:, chunk] and W2[chunk, :], `hc` hidden units each) into a
  `w_stages`-deep ring, each stage completing on an mbarrier (PipelineTmaAsync).
  Rows past the end, channels past C and hidden units past H are zero-filled by TMA.
  When the whole hidden width is one chunk the weights are loaded once per block.
  With two warpgroups along the channels and streamed weights the ring holds *items*
  instead of chunks (the blocked ring, `w1_block` > 0): per chunk, cp / w1_block W1
  items (w1_block channels x hc hidden units) then hc / w2_block W2 items (w2_block
  hidden units x cp channels), one stage each. At C = 512 a whole-chunk stage costs 2 KB
  per hidden unit; items let the chunk grow to 128 (GEMM1 at m64n64 per warpgroup) with
  several items in flight. Item t - 1 is released once item t is issued and
  `wgmma.wait_group 1` returns.
- Per chunk, each consumer warpgroup runs wgmma: acc1 = X W1chunk (A and B from shared
  memory), then + b1, ReLU, rounded to fp16, then Y_acc += H W2chunk. With one
  warpgroup along N (wg_n = 1) the fp16 H chunk stays in registers as wgmma's A operand
  (its accumulator layout is the A-operand layout); with wg_n = 2 (wide C: the output
  channels are split between two warpgroups) each computes half of the chunk's hidden
  units and writes them to a shared-memory H buffer (double-buffered), fenced for the
  async proxy, then both read the whole chunk as A from shared memory.
- The epilogue runs once per tile: Y = ReLU(Y_acc + b2 + X), masked to [rows, C]. When a
  thread's epilogue has at most EARLY_PAIRS X pairs, they are read from the X tile in
  shared memory right after the tile's X wait (early_residual); otherwise the epilogue
  reloads them from global memory (the tile the TMA just brought into L2). Y leaves as
  8-byte pairs.
- With `cluster_h` = 2 a cluster of two blocks owns each tile: block r runs the chunks of
  hidden half r (so twice the SMs compute when the tiles are few), stores the half of its
  Y accumulator that the other block finishes into that block's exchange buffer
  (distributed shared memory), and after a cluster barrier adds the other block's partial
  sums to its own half of the channels and runs the epilogue there.

The producer is one elected thread of warp 0 issuing the loads in line: `x_stages` X
tiles and `w_stages` chunks ahead, each refilled as soon as every consumer warp has
released it. The blocked ring has a producer warpgroup of its own instead (the block's
third; `setmaxnreg` 40 for it, 232 for the consumers): its first warp streams the weight
items, its second the X tiles, so the consumers never wait for each other to refill the
ring. Before its first load it prefetches into L2 the weight items of one pass that fall
to its block (item u by block u mod grid): a kernel that ran before may have evicted
them, and the ring looks too few items ahead to hide a miss to HBM on each
(notes/kernels.md, the L2 prefetch). Shared memory is allocated exactly as
src/compile/tiling_hopper.c counts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.utils import LayoutEnum

from rowfuse.kernels.rowfuse_kernels import WATCHDOG_NS, check_spin

WG_THREADS = 128
WG_ROWS = 64  # rows of one wgmma (m64nNk16) per consumer warpgroup
SMEM_ALIGN = 1024  # every TMA / wgmma buffer (the 128-byte swizzle repeats every 1 KB)
EPI_PAIRS = 32  # residual X pairs loaded before the epilogue's stores (32 registers)
# When a thread's epilogue has at most this many pairs (and one warpgroup spans the
# channels), its residual X is read from the tile in shared memory right after the tile's
# X wait, into registers, overlapping the GEMMs (early_residual); otherwise the epilogue
# reloads it from global memory
EARLY_PAIRS = 16
# Blocked ring: wgmma groups (one per item) a warpgroup keeps in flight; item t -
# ITEMS_IN_FLIGHT is released once item t is issued (the planner's ring holds at least
# ITEMS_IN_FLIGHT + 2 items: those in flight, the one being issued, one loading). Two
# measured the same as one at 8192x512x2048 (notes/kernels.md, the blocked weight ring)
ITEMS_IN_FLIGHT = 1
# The blocked ring's producer warpgroup (its own 128 threads; setmaxnreg): registers per
# thread of the producer and of each of the two consumer warpgroups. 2 x 128 x 232 +
# 128 x 40 = 64,512 of the SM's 65,536 (CUTLASS's split for one producer, two consumers)
PRODUCER_REGS = 40
CONSUMER_REGS = 232
# Named barriers: 1 + wg_mi for the two warpgroups of a row half (H chunk written), then
# the consumers' bias staging when a producer warpgroup does not take part (0 is
# __syncthreads)
BIAS_BARRIER = 3


class SpecError(ValueError):
    """A kernel specification that is incomplete or inconsistent."""


def _check(cond: bool, name: str, what: str) -> None:
    if not cond:
        raise SpecError(f"{name}: {what}")


@dataclass(frozen=True)
class HopperPlan:
    """Compile-time geometry of one fused_wgmma kernel, exactly as the C planner wrote it."""

    name: str
    mode: str
    channels: int
    hidden: int
    tile_rows: int  # 64 x wg_m
    wg_m: int  # consumer warpgroups along M (each owns 64 rows of the tile)
    wg_n: int  # consumer warpgroups along N (each owns 1 / wg_n of the channels)
    cp: int  # channels padded (K of GEMM1, N of GEMM2)
    hp: int  # hidden padded to whole chunks
    hc: int  # hidden units per chunk
    w_stages: int  # chunk buffers in the ring (= nchunks: resident, loaded once)
    x_stages: int  # X tile buffers
    cluster_h: int  # blocks of a cluster that split each tile's hidden units (1 or 2)
    w1_block: int  # blocked ring: channels (K of X W1) of one W1 item; 0 = whole chunks
    w2_block: int  # blocked ring: hidden units (K of H W2) of one W2 item
    smem_bytes: int
    # tests of the checks only (a planted fault, "" = none): "no_ring_wait" drops the
    # consumers' wait for a full weight stage, "ring_phase" waits for the other phase
    # parity (a ring phase off by one), "no_oob_fill" describes X, W1 and W2 to TMA
    # with their padded extents, so a partial box reads what lies past C and H instead of
    # zeros; launcher faults ("stream_*") leave the kernel unchanged
    fault: str = ""
    # a checking build: the producer spins this many cycles before each TMA issue (0 = none)
    check_delay: int = 0

    @property
    def producer_wg(self) -> bool:
        """The blocked ring has a producer warpgroup of its own (after the consumers)."""
        return self.blocked

    @property
    def threads(self) -> int:
        return WG_THREADS * (self.wg_m * self.wg_n + (1 if self.producer_wg else 0))

    @property
    def nchunks(self) -> int:
        """Chunks of one block (of its hidden half when a block pair shares the tile)."""
        return self.hp // self.hc // self.cluster_h

    @property
    def blocked(self) -> bool:
        """The ring holds blocks of a chunk, not whole chunks: per chunk cp / w1_block W1
        items (w1_block channels x hc hidden units) then hc / w2_block W2 items (w2_block
        hidden units x cp channels), each a stage of `stage_elems`."""
        return self.w1_block > 0

    @property
    def stage_elems(self) -> int:
        """fp16 elements of one ring stage (blocked ring), whole swizzle periods."""
        big = max(self.w1_block * self.hc, self.w2_block * self.cp)
        return (2 * big + SMEM_ALIGN - 1) // SMEM_ALIGN * SMEM_ALIGN // 2

    @property
    def items(self) -> tuple[int, int]:
        """Ring items of one chunk: W1 items, W2 items (blocked ring)."""
        return self.cp // self.w1_block, self.hc // self.w2_block

    @property
    def resident(self) -> bool:
        """Every chunk has its own buffer: the weights are loaded once per block and never
        released; otherwise they stream through the ring, every tile re-reading them."""
        return not self.blocked and self.w_stages == self.nchunks

    @classmethod
    def from_spec(cls, k: dict) -> HopperPlan:
        """The plan of one kernel_spec.json entry of mode fused_wgmma; SpecError naming a
        missing or inconsistent field (the generator checks the spec, it does not repair it)."""
        try:
            plan = cls(
                name=k["name"],
                mode=k["mode"],
                channels=k["channels"],
                hidden=k["hidden"],
                tile_rows=k["tile_rows"],
                wg_m=k["warps_m"] // 4,
                wg_n=k["warps_n"],
                cp=k["padded_channels"],
                hp=k["padded_hidden"],
                hc=k["hidden_chunk"],
                w_stages=k["weight_buffers"],
                x_stages=k["x_stages"],
                cluster_h=k["cluster_h"],
                w1_block=k["w1_block"],
                w2_block=k["w2_block"],
                smem_bytes=k["smem_bytes"],
                fault=k.get("fault", ""),
                check_delay=k.get("check_delay", 0),
            )
        except KeyError as e:
            raise SpecError(f"kernel {k.get('name', '?')}: field {e} missing") from None
        n, p = plan.name, plan
        _check(p.mode == "fused_wgmma", n, f"mode '{p.mode}' is not fused_wgmma")
        _check(k["warps_m"] % 4 == 0 and p.wg_m in (1, 2), n, "warps_m must be 4 or 8")
        _check(p.wg_n in (1, 2) and p.wg_m * p.wg_n <= 2, n, "at most two consumer warpgroups")
        _check(p.tile_rows == WG_ROWS * p.wg_m, n, "tile rows, warps and padded extents disagree")
        _check(p.channels % 8 == 0 and p.hidden % 8 == 0, n, "TMA needs C and H multiples of 8")
        cp_ok = p.cp >= p.channels and p.cp % 16 == 0 and p.cp % (8 * p.wg_n) == 0
        _check(cp_ok, n, "padded channels")
        _check(p.cp // p.wg_n <= 256, n, "more than 256 channels per warpgroup")
        _check(p.hc % (16 * p.wg_n) == 0 and p.hc // p.wg_n <= 256, n, "hidden chunk")
        _check(p.hp % p.hc == 0 and p.hp >= p.hidden, n, "hidden chunk or padding")
        _check(p.cluster_h in (1, 2), n, "cluster_h must be 1 or 2")
        _check(
            p.cluster_h == 1 or (p.wg_m == 1 and p.wg_n == 1 and (p.hp // p.hc) % 2 == 0),
            n,
            "a block pair splits whole chunks of one warpgroup's tile",
        )
        _check(p.hp - p.hidden < p.hc, n, "a chunk wholly in the padding")
        _check(k.get("threads") == p.threads, n, f"threads {k.get('threads')}, not {p.threads}")
        if p.blocked:
            _check(
                p.wg_n == 2 and p.wg_m == 1 and p.cluster_h == 1,
                n,
                "a blocked ring needs two warpgroups along C, one along the rows, no pair",
            )
            _check(p.w1_block % 16 == 0 and p.cp % p.w1_block == 0, n, "w1_block")
            _check(p.w2_block % 16 == 0 and p.hc % p.w2_block == 0, n, "w2_block")
            _check(1 <= p.x_stages <= 4 and ITEMS_IN_FLIGHT + 2 <= p.w_stages <= 16, n, "stages")
        else:
            _check(p.w1_block == 0 and p.w2_block == 0, n, "w2_block without w1_block")
            _check(1 <= p.x_stages <= 4 and 1 <= p.w_stages <= min(p.nchunks, 16), n, "stages")
        counted = WgmmaMlpKernel(plan).smem_count()
        _check(
            p.smem_bytes == counted,
            n,
            f"smem_bytes {p.smem_bytes} is not the {counted} bytes this layout allocates",
        )
        return plan


class WgmmaMlpKernel:
    """Generates the fused_wgmma kernel for a `HopperPlan` (see module docstring)."""

    def __init__(self, plan: HopperPlan):
        self.p = plan
        self.bm = plan.tile_rows
        self.nc_wg = plan.cp // plan.wg_n  # output channels per warpgroup
        self.hc_wg = plan.hc // plan.wg_n  # hidden units per warpgroup in GEMM1
        self.n_cwg = plan.wg_m * plan.wg_n  # consumer warpgroups (then the producer's)
        self.n_consumer_warps = 4 * self.n_cwg
        # pairs of one thread's epilogue: 64 x nc_wg values over 128 threads, halved when
        # a block pair shares the channels
        self.early_residual = (
            plan.wg_n == 1
            and WG_ROWS * self.nc_wg // WG_THREADS // 2 // plan.cluster_h <= EARLY_PAIRS
        )
        self.f16, self.f32 = cutlass.Float16, cutlass.Float32

    # ------------------------------------------------------------------ layouts
    def item_k(self):
        """K extents of one W1 and one W2 load: whole chunks, or the blocked ring's items."""
        p = self.p
        return (p.w1_block, p.w2_block) if p.blocked else (p.cp, p.hc)

    def tiled_mma(self, n: int, a_source):
        """One warpgroup's wgmma over 64 x n tiles: fp16 A (K-major, from shared memory or
        registers) times fp16 B (N-major), accumulated in f32. GEMM1 has n = hc / wg_n,
        GEMM2 n = cp / wg_n."""
        return sm90.make_trivial_tiled_mma(
            self.f16,
            self.f16,
            warpgroup.OperandMajorMode.K,
            warpgroup.OperandMajorMode.MN,
            self.f32,
            (1, 1, 1),
            tiler_mn=(WG_ROWS, n),
            a_source=a_source,
        )

    def smem_layouts(self):
        """Swizzled, staged shared-memory layouts of X, the W1 / W2 chunk parts and H."""
        p, f16 = self.p, self.f16
        # X tile (M = bm, K = cp), K-major: A of GEMM1
        x = sm90.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (self.bm, 8, p.cp), f16, p.x_stages)
        # W1 part of one warpgroup: B of GEMM1, (N = hc / wg_n hidden, K = cp), N-major
        # (blocked ring: K = w1_block per item)
        k1, k2 = self.item_k()
        w1 = sm90.make_smem_layout_b(
            LayoutEnum.COL_MAJOR, (WG_ROWS, self.hc_wg, k1), f16, p.w_stages
        )
        # W2 part of one warpgroup: B of GEMM2, (N = cp / wg_n channels, K = hc), N-major
        # (blocked ring: K = w2_block per item)
        w2 = sm90.make_smem_layout_b(
            LayoutEnum.COL_MAJOR, (WG_ROWS, self.nc_wg, k2), f16, p.w_stages
        )
        if p.blocked:
            # W1 and W2 items share the ring: the stage mode's stride is one stage
            w1, w2 = (self.restage(w, p.stage_elems) for w in (w1, w2))
        # H chunk (M = bm, K = hc), K-major, two buffers: A of GEMM2 when wg_n = 2
        h = sm90.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (self.bm, 8, p.hc), f16, 2)
        return x, w1, w2, h

    def smem_count(self) -> int:
        """Bytes of dynamic shared memory this kernel allocates, counted the way
        src/compile/tiling_hopper.c counts them (checked against the spec at build time)."""
        p = self.p

        def add(off: int, nbytes: int, align: int) -> int:
            return (off + align - 1) // align * align + nbytes

        off = add(0, 8 * 2 * (p.x_stages + p.w_stages), 8)  # full + empty mbarriers
        off = add(off, 4 * p.hp, 16)  # b1
        off = add(off, 4 * p.cp, 16)  # b2
        off = add(off, 2 * self.bm * p.cp * p.x_stages, SMEM_ALIGN)  # X ring
        if p.blocked:
            off = add(off, 2 * p.stage_elems * p.w_stages, SMEM_ALIGN)  # W1 / W2 item ring
        else:
            off = add(off, 2 * p.cp * p.hc * p.w_stages, SMEM_ALIGN)  # W1 ring (wg_n parts)
            off = add(off, 2 * p.hc * p.cp * p.w_stages, SMEM_ALIGN)  # W2 ring (wg_n parts)
        if p.wg_n > 1:
            off = add(off, 2 * self.bm * p.hc * 2, SMEM_ALIGN)  # H, two buffers
        if p.cluster_h > 1:
            off = add(off, 4 * self.bm * p.cp // 2, 16)  # Y partial sums from the other block
        return off + SMEM_ALIGN  # the allocator's base alignment

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
        mma1 = self.tiled_mma(self.hc_wg, warpgroup.OperandSource.SMEM)
        a2 = warpgroup.OperandSource.RMEM if p.wg_n == 1 else warpgroup.OperandSource.SMEM
        mma2 = self.tiled_mma(self.nc_wg, a2)
        lx, lw1, lw2, lh = self.smem_layouts()
        # B views of the weights: W1 [C, H] seen as (N = H, K = C), W2 [H, C] as (N = C, K = H)
        nh, nc = p.hidden, p.channels
        if cutlass.const_expr(p.fault == "no_oob_fill"):  # planted: no zero fill past C, H
            nh, nc = p.hp, p.cp
            mX = cute.make_tensor(
                mX.iterator, cute.make_layout((mX.shape[0], nc), stride=(p.channels, 1))
            )
        gW1 = cute.make_tensor(mW1.iterator, cute.make_layout((nh, nc), stride=(1, p.hidden)))
        gW2 = cute.make_tensor(mW2.iterator, cute.make_layout((nc, nh), stride=(1, p.channels)))
        g2s = cpasync.CopyBulkTensorTileG2SOp()
        tma_x, tX = cpasync.make_tiled_tma_atom(
            g2s, mX, cute.slice_(lx, (None, None, 0)), (self.bm, p.cp)
        )
        k1, k2 = self.item_k()
        tma_w1, tW1 = cpasync.make_tiled_tma_atom(
            g2s, gW1, cute.slice_(lw1, (None, None, 0)), (self.hc_wg, k1)
        )
        tma_w2, tW2 = cpasync.make_tiled_tma_atom(
            g2s, gW2, cute.slice_(lw2, (None, None, 0)), (self.nc_wg, k2)
        )
        self.kernel(
            mma1,
            mma2,
            tma_x,
            tX,
            tma_w1,
            tW1,
            tma_w2,
            tW2,
            mX,
            mB1,
            mB2,
            mY,
            rows,
            lx,
            lw1,
            lw2,
            lh,
        ).launch(
            grid=(grid, 1, 1),
            block=(p.threads, 1, 1),
            cluster=(p.cluster_h, 1, 1) if p.cluster_h > 1 else None,
            smem=p.smem_bytes,
            stream=stream,
        )

    # ------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(
        self,
        mma1: cute.TiledMma,
        mma2: cute.TiledMma,
        tma_x: cute.CopyAtom,
        tX: cute.Tensor,
        tma_w1: cute.CopyAtom,
        tW1: cute.Tensor,
        tma_w2: cute.CopyAtom,
        tW2: cute.Tensor,
        mX: cute.Tensor,
        mB1: cute.Tensor,
        mB2: cute.Tensor,
        mY: cute.Tensor,
        rows: cutlass.Int32,
        lx: cute.ComposedLayout,
        lw1: cute.ComposedLayout,
        lw2: cute.ComposedLayout,
        lh: cute.ComposedLayout,
    ):
        p, bm = self.p, self.bm
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // WG_THREADS)
        wg_mi = wg // p.wg_n
        wg_ni = wg - wg_mi * p.wg_n
        wtid = tidx - wg * WG_THREADS  # thread index within the warpgroup

        if warp == 0:
            cpasync.prefetch_descriptor(tma_x)
            cpasync.prefetch_descriptor(tma_w1)
            cpasync.prefetch_descriptor(tma_w2)

        # a cluster of cluster_h blocks owns each tile; block `rank` runs its hidden part
        rank, cid, ncl = cutlass.Int32(0), bid, nblk
        if cutlass.const_expr(p.cluster_h > 1):
            rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            cid, ncl = bid // p.cluster_h, nblk // p.cluster_h

        mbar, sB1, sB2, sX, pW1, pW2, sH, sXch = self.alloc_smem(lx, lw1, lw2, lh)
        x_pipe, w_pipe = self.make_pipelines(mbar)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()  # barriers initialised
        if cutlass.const_expr(p.cluster_h > 1):
            # the first cluster barrier phase: its wait, before the first store into the
            # other block's shared memory, proves that block has started
            cute.arch.cluster_arrive_relaxed()
        tXs, tXg, tW1s, tW1g, tW2s, tW2g = self.tma_partitions(
            tma_x, tX, tma_w1, tW1, tma_w2, tW2, sX, pW1, pW2, lw1, lw2
        )

        ntiles = (rows + bm - 1) // bm
        n_my = 0
        if cid < ntiles:
            n_my = (ntiles - cid + ncl - 1) // ncl
        n_w = n_my * p.nchunks  # chunk loads this block consumes (streamed weights)
        if cutlass.const_expr(p.resident):
            n_w = p.nchunks if n_my > 0 else 0  # each chunk once
        if cutlass.const_expr(p.blocked):
            n_w = n_my * p.nchunks * (p.items[0] + p.items[1])  # ring items

        xp = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, p.x_stages)
        wp = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, p.w_stages)
        xc = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, p.x_stages)
        wc = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, p.w_stages)
        wr = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, p.w_stages)

        # ---------------- prologue: fill both rings (the producer warpgroup, when there
        # is one, fills them in its own loop)
        if cutlass.const_expr(not p.producer_wg):
            if warp == 0:
                for _ in cutlass.range(cutlass.min(p.x_stages, n_my), unroll=1):
                    self.load_x(x_pipe, xp, tma_x, tXs, tXg, cid + xp.count * ncl)
                    xp.advance()
                if cutlass.const_expr(p.check_delay == 0):
                    for _ in cutlass.range(cutlass.min(p.w_stages, n_w), unroll=1):
                        self.load_w(w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank)
                        wp.advance()

        # b1 and b2 into shared memory while the first loads are in flight (their global
        # round trip off the path to the first wgmma), visible to all before any chunk (with
        # a producer warpgroup: by the consumers, after it has started)
        if cutlass.const_expr(not p.producer_wg):
            self.stage_biases(mB1, mB2, sB1, sB2, tidx, p.threads)
            cute.arch.sync_threads()
            if cutlass.const_expr(p.check_delay > 0):
                if warp == 0:
                    wp = self.first_lap_late(
                        w_pipe,
                        wp,
                        cutlass.min(p.w_stages, n_w),
                        tma_w1,
                        tW1s,
                        tW1g,
                        tma_w2,
                        tW2s,
                        tW2g,
                        rank,
                    )

        # ---------------- per-warpgroup MMA partitions
        thr1 = mma1.get_slice(wtid)
        thr2 = mma2.get_slice(wtid)
        sXw = cute.local_tile(sX, (WG_ROWS, p.cp), (wg_mi, 0, None))  # (64, cp, stage)
        tCrA1 = mma1.make_fragment_A(thr1.partition_A(sXw))
        n1, n2 = self.part_elems(lw1, lw2)
        tCrB1 = mma1.make_fragment_B(thr1.partition_B(self.part(pW1, wg_ni * n1, lw1)))
        tCrB2 = mma2.make_fragment_B(thr2.partition_B(self.part(pW2, wg_ni * n2, lw2)))
        tCrA2 = sHw = None
        if cutlass.const_expr(p.wg_n > 1):
            sHw = cute.local_tile(sH, (WG_ROWS, p.hc), (wg_mi, 0, None))  # (64, hc, buf)
            tCrA2 = mma2.make_fragment_A(thr2.partition_A(sHw))
        acc1_shape = thr1.partition_shape_C((WG_ROWS, self.hc_wg))
        accY = thr2.make_fragment_C(thr2.partition_shape_C((WG_ROWS, self.nc_wg)))
        # coordinates of this thread's accumulator elements, in the warpgroup's tile
        tCc1 = thr1.partition_C(cute.make_identity_tensor((WG_ROWS, self.hc_wg)))
        tCcY = thr2.partition_C(cute.make_identity_tensor((WG_ROWS, self.nc_wg)))

        # ---------------- the producer warpgroup (blocked ring): its first warp streams the
        # weight items and its second the X tiles, each as far ahead as its ring allows, so
        # the consumer warpgroups only wait for full stages and release them
        if wg >= self.n_cwg:  # never true without a producer warpgroup
            if cutlass.const_expr(p.producer_wg):
                cute.arch.warpgroup_reg_dealloc(PRODUCER_REGS)
                if warp == 4 * self.n_cwg:
                    # the blocks share out the weight items of one pass (item u by block
                    # u mod grid) and prefetch them into L2 first: whatever ran before
                    # this kernel may have evicted them, and the ring looks only two
                    # items ahead, too little to hide a miss to HBM on every item
                    npass = p.nchunks * (p.items[0] + p.items[1])
                    if n_my > 0:
                        with cute.arch.elect_one():
                            for u in cutlass.range(bid, npass, nblk, unroll=1):
                                self.prefetch_item(tma_w1, tW1g, tma_w2, tW2g, u)
                    for _ in cutlass.range(n_w, unroll=1):
                        self.load_w(w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank)
                        wp.advance()
                if warp == 4 * self.n_cwg + 1:
                    for _ in cutlass.range(n_my, unroll=1):
                        self.load_x(x_pipe, xp, tma_x, tXs, tXg, cid + xp.count * ncl)
                        xp.advance()
        else:
            if cutlass.const_expr(p.producer_wg):
                cute.arch.warpgroup_reg_alloc(CONSUMER_REGS)
                self.stage_biases(mB1, mB2, sB1, sB2, tidx, WG_THREADS * self.n_cwg)
                cute.arch.barrier(
                    barrier_id=BIAS_BARRIER, number_of_threads=WG_THREADS * self.n_cwg
                )
            # ---------------- the tiles of this block
            for i in cutlass.range(n_my, unroll=1):
                row0 = (cid + i * ncl) * bm + wg_mi * WG_ROWS  # first row of this warpgroup
                accY.fill(0.0)
                self.consumer_wait(x_pipe, xc)
                xres = None
                if cutlass.const_expr(self.early_residual):
                    # this thread's residual X from the tile in shared memory, read now (before
                    # the buffer goes back; the reads overlap the GEMMs)
                    _, npr = self.epilogue_pairs(accY, 0, p.cluster_h)
                    xres = cute.make_rmem_tensor(cute.make_layout((2, npr)), self.f16)
                    sXt = sXw[None, None, xc.index]
                    if cutlass.const_expr(p.cluster_h == 1):
                        self.residual_from_smem(sXt, xres, tCcY, 0)
                    elif rank == 0:
                        self.residual_from_smem(sXt, xres, tCcY, 0)
                    else:
                        self.residual_from_smem(sXt, xres, tCcY, npr)
                if cutlass.const_expr(p.resident):
                    # chunk j sits in buffer j, loaded once: phase 0 of its full barrier
                    wc = pipeline.make_pipeline_state(
                        pipeline.PipelineUserType.Consumer, p.w_stages
                    )
                if cutlass.const_expr(p.blocked):
                    for j in cutlass.range(p.nchunks, unroll=1):
                        # blocked ring: wr trails wc by the item in flight; the producer
                        # warpgroup refills what is released
                        acc1 = thr1.make_fragment_C(acc1_shape)
                        i1, i2 = p.items
                        ka, kb = p.w1_block // 16, p.w2_block // 16  # k16 steps per W1 / W2 item
                        for t in cutlass.range_constexpr(i1):  # acc1 = X W1chunk, item by item
                            self.ring_wait(w_pipe, wc)
                            warpgroup.fence()
                            self.gemm_item(
                                mma1, acc1, tCrA1, tCrB1, t * ka, xc.index, wc.index, ka, t == 0
                            )
                            warpgroup.commit_group()
                            wc.advance()
                            if cutlass.const_expr(t >= ITEMS_IN_FLIGHT):
                                warpgroup.wait_group(
                                    ITEMS_IN_FLIGHT
                                )  # item t - ITEMS_IN_FLIGHT has been read
                                w_pipe.consumer_release(wr)
                                wr.advance()
                        warpgroup.wait_group(0)
                        for _ in cutlass.range_constexpr(
                            min(i1, ITEMS_IN_FLIGHT)
                        ):  # the last W1 items
                            w_pipe.consumer_release(wr)
                            wr.advance()
                        hfrag = self.hidden_act(acc1, tCc1, sB1, j * p.hc + wg_ni * self.hc_wg)
                        hb = (i * p.nchunks + j) % 2  # H buffer: alternates across chunks and tiles
                        self.store_h(hfrag, acc1, tCc1, sHw, hb, wg_ni)
                        # the writes reach the async proxy, then both warpgroups of these
                        # rows have written their half of the chunk (and finished their
                        # GEMM2 of the chunk before, which read the other H buffer: the one
                        # the next chunk overwrites)
                        cute.arch.fence_proxy("async.shared", space="cta")
                        cute.arch.barrier(
                            barrier_id=1 + wg_mi, number_of_threads=WG_THREADS * p.wg_n
                        )
                        for t in cutlass.range_constexpr(i2):  # Y_acc += H W2chunk, item by item
                            self.ring_wait(w_pipe, wc)
                            warpgroup.fence()
                            self.gemm_item(
                                mma2, accY, tCrA2, tCrB2, t * kb, hb, wc.index, kb, False
                            )
                            warpgroup.commit_group()
                            wc.advance()
                            if cutlass.const_expr(t >= ITEMS_IN_FLIGHT):
                                warpgroup.wait_group(ITEMS_IN_FLIGHT)
                                w_pipe.consumer_release(wr)
                                wr.advance()
                        warpgroup.wait_group(0)  # the chunk's last W2 items
                        for _ in cutlass.range_constexpr(min(i2, ITEMS_IN_FLIGHT)):
                            w_pipe.consumer_release(wr)
                            wr.advance()
                else:
                    for j in cutlass.range(p.nchunks, unroll=1):
                        if cutlass.const_expr(p.check_delay > 0):
                            if warp == 0 and i == 0 and j == 0:
                                self.first_stage_late(
                                    w_pipe, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank
                                )
                        self.ring_wait(w_pipe, wc)
                        mmas = (mma1, thr1, acc1_shape, tCrA1, tCrB1, mma2, tCrA2, tCrB2, tCc1)
                        hb = (
                            i * p.nchunks + j
                        ) % 2  # H buffer (two warpgroups): alternates across tiles
                        jg = rank * p.nchunks + j  # the chunk's index in the whole hidden width
                        self.chunk(mmas, accY, sB1, sHw, xc.index, wc.index, jg, hb, wg_mi, wg_ni)
                        if cutlass.const_expr(p.resident):
                            wc.advance()
                        else:
                            w_pipe.consumer_release(wc)
                            wc.advance()
                            if warp == 0:
                                if wp.count < n_w:
                                    self.load_w(
                                        w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank
                                    )
                                    wp.advance()
                # every wgmma reading this X tile has completed and the epilogue reads X from
                # registers (early_residual) or global memory: the buffer goes back now, so the
                # next tile's X streams in during the epilogue
                if cutlass.const_expr(self.early_residual):
                    # this thread's generic-proxy reads of the buffer before the TMA refills it
                    cute.arch.fence_proxy("async.shared", space="cta")
                x_pipe.consumer_release(xc)
                xc.advance()
                if cutlass.const_expr(not p.producer_wg):
                    if warp == 0:
                        if xp.count < n_my:
                            self.load_x(x_pipe, xp, tma_x, tXs, tXg, cid + xp.count * ncl)
                            xp.advance()
                if cutlass.const_expr(p.cluster_h == 1):
                    self.epilogue(mX, mY, accY, tCcY, sB2, xres, row0, wg_ni, rows, 0, 1)
                else:
                    self.exchange_and_finish(
                        mX, mY, accY, tCcY, sB2, sXch, xres, row0, rows, rank, tidx
                    )
        if cutlass.const_expr(p.cluster_h > 1):
            cute.arch.cluster_wait()  # the last exchange is over in both blocks

    @cute.jit
    def exchange_and_finish(self, mX, mY, accY, tCcY, sB2, sXch, xres, row0, rows, rank, tidx):
        """A block pair's tile: block r finishes channel half r. The accumulator's values
        are ordered (column pair, row half, column block of 8), so its first half holds
        channels [0, cp / 2) and the second half the rest, for every thread alike; thread t
        of one block holds the same (row, channel) cells as thread t of the other. Each
        block stores the other block's half into that block's exchange buffer (value k of
        thread t at k x threads + t), then a cluster barrier (release / acquire), then adds
        what it received and runs the epilogue over its half. Cluster barriers alternate
        arrive / wait in every thread: the wait at the top of a tile completes the phase
        the other block arrived on after reading its buffer for the previous tile (or, for
        the first tile, at its start), so no store reaches a block that has not started or
        a buffer still being read; the kernel's last wait closes the last tile's phase."""
        p = self.p
        half = cute.size(accY) // 2
        remote = cute.arch.map_dsmem_ptr(sXch.iterator, 1 - rank)  # the other block's buffer
        cute.arch.cluster_wait()  # the other block has read its buffer (or has started)
        if rank == 0:
            for k in cutlass.range_constexpr(half):
                self.store_remote(remote + (k * p.threads + tidx), accY[half + k])
        else:
            for k in cutlass.range_constexpr(half):
                self.store_remote(remote + (k * p.threads + tidx), accY[k])
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if rank == 0:
            for k in cutlass.range_constexpr(half):
                accY[k] = accY[k] + sXch[k, tidx]
            cute.arch.cluster_arrive()
            self.epilogue(mX, mY, accY, tCcY, sB2, xres, row0, 0, rows, 0, 2)
        else:
            for k in cutlass.range_constexpr(half):
                accY[half + k] = accY[half + k] + sXch[k, tidx]
            cute.arch.cluster_arrive()
            self.epilogue(mX, mY, accY, tCcY, sB2, xres, row0, 0, rows, 1, 2)

    # ------------------------------------------------------------------ setup helpers
    def alloc_smem(self, lx, lw1, lw2, lh):
        """The block's shared memory, in the order src/compile/tiling_hopper.c counts it
        (plain Python, run while the kernel is traced)."""
        p, f16, f32 = self.p, self.f16, self.f32
        smem = cutlass.utils.SmemAllocator()
        mbar = smem.allocate_array(cutlass.Int64, 2 * (p.x_stages + p.w_stages), byte_alignment=8)
        sB1 = smem.allocate_tensor(f32, cute.make_layout(p.hp), 16)
        sB2 = smem.allocate_tensor(f32, cute.make_layout(p.cp), 16)
        sX = smem.allocate_tensor(f16, lx.outer, SMEM_ALIGN, lx.inner)
        # the warpgroups' W1 (W2) parts back to back; each part is whole swizzle atoms
        if p.blocked:  # one ring of items; W1 and W2 views of it
            pW1 = pW2 = smem.allocate_array(
                f16, p.stage_elems * p.w_stages, byte_alignment=SMEM_ALIGN
            )
        else:
            n1, n2 = self.part_elems(lw1, lw2)
            pW1 = smem.allocate_array(f16, n1 * p.wg_n, byte_alignment=SMEM_ALIGN)
            pW2 = smem.allocate_array(f16, n2 * p.wg_n, byte_alignment=SMEM_ALIGN)
        sH = sXch = None
        if p.wg_n > 1:
            sH = smem.allocate_tensor(f16, lh.outer, SMEM_ALIGN, lh.inner)
        if p.cluster_h > 1:
            half = self.bm * p.cp // 2 // p.threads  # accumulator values per thread / 2
            sXch = smem.allocate_tensor(
                f32, cute.make_layout((half, p.threads), stride=(p.threads, 1)), 16
            )
        return mbar, sB1, sB2, sX, pW1, pW2, sH, sXch

    def make_pipelines(self, mbar):
        """The X ring and the chunk ring: full barriers (one producer arrival plus the
        stage's TMA bytes) and empty barriers (one arrival per consumer warp)."""
        p = self.p
        producer = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, self.n_consumer_warps)
        x_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=mbar,
            num_stages=p.x_stages,
            producer_group=producer,
            consumer_group=consumers,
            tx_count=2 * self.bm * p.cp,
            defer_sync=True,
        )
        w_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=mbar + 2 * p.x_stages,
            num_stages=p.w_stages,
            producer_group=producer,
            consumer_group=consumers,
            # (blocked ring: each item arms its own byte count, load_item)
            tx_count=2 * 2 * p.cp * p.hc if not p.blocked else 2 * p.hc * p.w1_block,
            defer_sync=True,
        )
        return x_pipe, w_pipe

    @cute.jit
    def stage_biases(self, mB1, mB2, sB1, sB2, tidx, nthreads: cutlass.Constexpr):
        """b1 and b2 into shared memory, zero past H and C, once per block, by threads
        0 .. nthreads."""
        p, f32 = self.p, self.f32
        for i in cutlass.range(tidx, p.hp, nthreads):
            v = f32(0.0)
            if i < p.hidden:
                v = mB1[i]
            sB1[i] = v
        for i in cutlass.range(tidx, p.cp, nthreads):
            v = f32(0.0)
            if i < p.channels:
                v = mB2[i]
            sB2[i] = v

    def tma_partitions(self, tma_x, tX, tma_w1, tW1, tma_w2, tW2, sX, pW1, pW2, lw1, lw2):
        """TMA views (one CTA, no multicast): X tiles of (tile_rows, cp) along the rows;
        W1 part n of chunk j = hidden units [j hc + n hc_wg, +hc_wg) = tile j wg_n + n of the
        (H, C) view; W2 part n of chunk j = tile (n, j) of the (C, H) view. Blocked ring: the
        W1 tiles are (hc_wg, w1_block), indexed (j wg_n + n, channel block), the W2 tiles
        (nc_wg, w2_block), indexed (n, hidden block)."""
        p = self.p
        n1, n2 = self.part_elems(lw1, lw2)
        one = cute.make_layout(1)
        gX = cute.local_tile(tX, (self.bm, p.cp), (None, 0))  # (bm, cp, tiles)
        tXs, tXg = cpasync.tma_partition(
            tma_x, 0, one, cute.group_modes(sX, 0, 2), cute.group_modes(gX, 0, 2)
        )
        k1, k2 = self.item_k()
        c1 = (None, None) if p.blocked else (None, 0)
        gW1 = cute.local_tile(tW1, (self.hc_wg, k1), c1)
        gW2 = cute.local_tile(tW2, (self.nc_wg, k2), (None, None))  # (nc_wg, k2, n, j)
        tW1s, tW1g, tW2s, tW2g = [], [], [], []
        for n in range(p.wg_n):
            s1, g1 = cpasync.tma_partition(
                tma_w1,
                0,
                one,
                cute.group_modes(self.part(pW1, n * n1, lw1), 0, 2),
                cute.group_modes(gW1, 0, 2),
            )
            s2, g2 = cpasync.tma_partition(
                tma_w2,
                0,
                one,
                cute.group_modes(self.part(pW2, n * n2, lw2), 0, 2),
                cute.group_modes(gW2[(None, None, n, None)], 0, 2),
            )
            tW1s.append(s1)
            tW1g.append(g1)
            tW2s.append(s2)
            tW2g.append(g2)
        return tXs, tXg, tW1s, tW1g, tW2s, tW2g

    # ------------------------------------------------------------------ helpers
    @cute.jit
    def chunk(self, mmas, accY, sB1, sHw, xs, ws, j, hb, wg_mi, wg_ni):
        """One hidden chunk j of a tile, operands in X buffer xs and chunk buffer ws:
        acc1 = X W1chunk, H = fp16(ReLU(acc1 + b1)), Y_acc += H W2chunk; every wgmma of it
        has completed on return (so the caller may release the chunk buffer)."""
        p = self.p
        mma1, thr1, acc1_shape, tCrA1, tCrB1, mma2, tCrA2, tCrB2, tCc1 = mmas
        acc1 = thr1.make_fragment_C(acc1_shape)
        warpgroup.fence()
        self.gemm(mma1, acc1, tCrA1, tCrB1, xs, ws, False)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
        hfrag = self.hidden_act(acc1, tCc1, sB1, j * p.hc + wg_ni * self.hc_wg)
        if cutlass.const_expr(p.wg_n == 1):
            warpgroup.fence()
            self.gemm_rs(mma2, accY, hfrag, tCrB2, ws)
        else:
            self.store_h(hfrag, acc1, tCc1, sHw, hb, wg_ni)
            # the writes reach the async proxy, then both warpgroups of these rows have
            # written their half of the chunk
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=1 + wg_mi, number_of_threads=WG_THREADS * p.wg_n)
            warpgroup.fence()
            self.gemm(mma2, accY, tCrA2, tCrB2, hb, ws, True)
        warpgroup.commit_group()
        warpgroup.wait_group(0)

    def store_remote(self, ptr, value):
        """st.shared::cluster of one fp32 through a distributed shared memory pointer."""
        llvm.store(self.f32(value).ir_value(), ptr.to_llvm_ptr())

    @staticmethod
    def restage(layout, stride):
        """`layout` (swizzled, staged) with its stage mode's stride set to `stride`."""
        one = cute.slice_(layout.outer, (None, None, 0))
        stages = cute.size(layout.outer, mode=[2])
        outer = cute.append(one, cute.make_layout(stages, stride=stride))
        return cute.make_composed_layout(layout.inner, 0, outer)

    def part_elems(self, lw1, lw2):
        """Elements between the warpgroups' W1 (W2) parts: whole rings back to back, or
        (blocked ring) the parts side by side within one stage."""
        p = self.p
        if p.blocked:
            return self.hc_wg * p.w1_block, self.nc_wg * p.w2_block
        return cute.cosize(lw1.outer), cute.cosize(lw2.outer)

    def part(self, base, offset, layout):
        """The swizzled tensor of `layout` at element `offset` from `base`."""
        ptr = cute.recast_ptr(base + offset, layout.inner, dtype=self.f16)
        return cute.make_tensor(ptr, layout.outer)

    @cute.jit
    def wait(self, bar, phase):
        """Waits for `phase` of the mbarrier at `bar`; traps after WATCHDOG_NS."""
        done = cute.arch.mbarrier_try_wait(bar, phase)
        if not done:
            t0 = cute.arch.globaltimer()
            while not done:
                done = cute.arch.mbarrier_try_wait(bar, phase)
                if not done:
                    if cute.arch.globaltimer() - t0 > WATCHDOG_NS:
                        llvm.intr_trap()

    @cute.jit
    def consumer_wait(self, pipe, state):
        """The stage `state` points at is full (its TMA bytes landed)."""
        self.wait(pipe.sync_object_full.get_barrier(state.index), state.phase)

    @cute.jit
    def ring_wait(self, pipe, state):
        """consumer_wait on the weight ring, or the planted faults (tests of the checks
        only): no wait at all, or a wait for the other phase parity, which a fresh or
        completed phase satisfies at once."""
        if cutlass.const_expr(self.p.fault == "ring_phase"):
            self.wait(pipe.sync_object_full.get_barrier(state.index), state.phase ^ 1)
        elif cutlass.const_expr(self.p.fault != "no_ring_wait"):
            self.consumer_wait(pipe, state)

    @cute.jit
    def first_lap_late(self, w_pipe, wp, m, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank):
        """A checking build's first lap of the weight ring (no producer warpgroup): stages
        1 .. m - 1 issued after the block barrier (a delay before each); stage 0, the first
        any consumer reads, is issued by first_stage_late right before that read's wait, so
        a read that skips its full-barrier wait (or waits for the wrong parity, which a
        fresh barrier satisfies at once) comes a TMA latency too early and finds the check's
        poison, whichever warp issues and however long the lap took. Returns the producer
        state after the lap (count m), as m advances of `wp` would."""
        for k in cutlass.range(1, m, unroll=1):
            st = pipeline.PipelineState(self.p.w_stages, k, k, cutlass.Int32(1))
            self.load_w(w_pipe, st, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank)
        for _ in cutlass.range(m, unroll=1):
            wp.advance()
        return wp

    @cute.jit
    def first_stage_late(self, w_pipe, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank):
        """A checking build's stage 0 of the first lap (first_lap_late), issued by the
        thread that issues loads, right before the consumers' first wait on the ring."""
        st = pipeline.PipelineState(self.p.w_stages, 0, 0, cutlass.Int32(1))
        self.load_w(w_pipe, st, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank)

    @cute.jit
    def delay(self):
        """A checking build's spin before a TMA issue (check_spin); nothing otherwise."""
        if cutlass.const_expr(self.p.check_delay > 0):
            check_spin(self.p.check_delay)

    @cute.jit
    def producer_acquire(self, pipe, state):
        """The stage is empty (every consumer warp released it); then this thread arms its
        full barrier with the stage's TMA byte count (PipelineTmaAsync.producer_acquire)."""
        self.wait(pipe.sync_object_empty.get_barrier(state.index), state.phase)
        pipe.sync_object_full.arrive(state.index, pipe.producer_mask)

    @cute.jit
    def load_x(self, x_pipe, xp, tma_x, tXs, tXg, tile):
        """TMA of X tile `tile` into the X buffer the producer state points at."""
        self.producer_acquire(x_pipe, xp)
        self.delay()
        cute.copy(
            tma_x,
            tXg[(None, tile)],
            tXs[(None, xp.index)],
            tma_bar_ptr=x_pipe.producer_get_barrier(xp),
        )

    @cute.jit
    def load_item(self, w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g):
        """Blocked ring: TMA of item wp.count of the sequence (per tile, per chunk j: the
        W1 items of channel blocks 0.., then the W2 items of the chunk's hidden blocks),
        every warpgroup's part; the full barrier expects that item's bytes."""
        p = self.p
        i1, i2 = p.items
        j, v = self.item_of(wp.count % (p.nchunks * (i1 + i2)))
        self.wait(w_pipe.sync_object_empty.get_barrier(wp.index), wp.phase)
        bar = w_pipe.producer_get_barrier(wp)
        self.delay()
        if v < i1:
            w_pipe.sync_object_full.arrive_and_expect_tx(wp.index, 2 * p.hc * p.w1_block)
            for n in cutlass.range_constexpr(p.wg_n):
                g = tW1g[n][(None, j * p.wg_n + n, v)]
                cute.copy(tma_w1, g, tW1s[n][(None, wp.index)], tma_bar_ptr=bar)
        else:
            w_pipe.sync_object_full.arrive_and_expect_tx(wp.index, 2 * p.cp * p.w2_block)
            for n in cutlass.range_constexpr(p.wg_n):
                g = tW2g[n][(None, j * i2 + v - i1)]
                cute.copy(tma_w2, g, tW2s[n][(None, wp.index)], tma_bar_ptr=bar)

    def item_of(self, u):
        """Item u of one pass of the blocked ring: (chunk j, its item v), v < items[0] a
        W1 item (channel block v), else W2 item v - items[0] (a hidden block)."""
        per = self.p.items[0] + self.p.items[1]
        j = u // per
        return j, u - j * per

    @cute.jit
    def prefetch_item(self, tma_w1, tW1g, tma_w2, tW2g, u):
        """Blocked ring: L2 prefetch (cp.async.bulk.prefetch.tensor) of item u of a pass,
        every warpgroup's part (load_item's sequence)."""
        p = self.p
        i1, i2 = p.items
        j, v = self.item_of(u)
        if v < i1:
            for n in cutlass.range_constexpr(p.wg_n):
                cute.prefetch(tma_w1, tW1g[n][(None, j * p.wg_n + n, v)])
        else:
            for n in cutlass.range_constexpr(p.wg_n):
                cute.prefetch(tma_w2, tW2g[n][(None, j * i2 + v - i1)])

    @cute.jit
    def load_w(self, w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g, rank):
        """TMA of this block's hidden chunk (wp.count mod nchunks), chunk rank x nchunks +
        that of the whole width: W1 and W2 parts of every warpgroup (blocked ring: the
        next item, load_item)."""
        p = self.p
        if cutlass.const_expr(p.blocked):
            self.load_item(w_pipe, wp, tma_w1, tW1s, tW1g, tma_w2, tW2s, tW2g)
        else:
            j = rank * p.nchunks + wp.count % p.nchunks
            self.producer_acquire(w_pipe, wp)
            bar = w_pipe.producer_get_barrier(wp)
            self.delay()
            for n in cutlass.range_constexpr(p.wg_n):
                cute.copy(
                    tma_w1,
                    tW1g[n][(None, j * p.wg_n + n)],
                    tW1s[n][(None, wp.index)],
                    tma_bar_ptr=bar,
                )
                cute.copy(tma_w2, tW2g[n][(None, j)], tW2s[n][(None, wp.index)], tma_bar_ptr=bar)

    @cute.jit
    def gemm(self, mma, acc, tA, tB, a_stage, b_stage, accumulate: cutlass.Constexpr):
        """acc (+)= A @ B over the K blocks, both operands from shared memory."""
        nk = cute.size(tA, mode=[2])
        for k in cutlass.range_constexpr(nk):
            mma.set(warpgroup.Field.ACCUMULATE, accumulate or k != 0)
            cute.gemm(mma, acc, tA[None, None, k, a_stage], tB[None, None, k, b_stage], acc)

    @cute.jit
    def gemm_item(
        self,
        mma,
        acc,
        tA,
        tB,
        a_k0: cutlass.Constexpr,
        a_stage,
        b_stage,
        nk: cutlass.Constexpr,
        first: cutlass.Constexpr,
    ):
        """acc (+)= A[:, k0 .. k0 + nk) @ B of one blocked-ring item (K steps 0 .. nk), both
        from shared memory; `first` starts the accumulator over."""
        for k in cutlass.range_constexpr(nk):
            mma.set(warpgroup.Field.ACCUMULATE, not first or k != 0)
            cute.gemm(mma, acc, tA[None, None, a_k0 + k, a_stage], tB[None, None, k, b_stage], acc)

    @cute.jit
    def gemm_rs(self, mma, acc, rA, tB, b_stage):
        """acc += A @ B with A (the fp16 H chunk) in registers, B from shared memory."""
        nk = cute.size(rA, mode=[2])
        mma.set(warpgroup.Field.ACCUMULATE, True)
        for k in cutlass.range_constexpr(nk):
            cute.gemm(mma, acc, rA[None, None, k], tB[None, None, k, b_stage], acc)

    @cute.jit
    def hidden_act(self, acc1, tCc1, sB1, col0):
        """fp16(ReLU(acc1 + b1)) in the wgmma A-operand register layout (K = the chunk's
        hidden units): the m64nN accumulator layout regrouped, value for value."""
        f16, f32 = self.f16, self.f32
        # accumulator mode 0 is (2 columns, 2 row halves, N/8 column blocks); the A operand
        # of a k16 step takes two column blocks, so the N/8 blocks split into (2, N/16)
        c = acc1.layout
        nblk = cute.size(c.shape[0][2])
        a_layout = cute.make_layout(
            ((2, 2, 2), 1, nblk // 2),
            stride=(
                (c.stride[0][0], c.stride[0][1], c.stride[0][2]),
                0,
                2 * c.stride[0][2],
            ),
        )
        hfrag = cute.make_rmem_tensor(a_layout, f16)
        h_as_acc = cute.make_tensor(hfrag.iterator, c)
        for i in cutlass.range_constexpr(cute.size(acc1)):
            col = tCc1[i][1]
            h_as_acc[i] = cute.arch.fmax(acc1[i] + sB1[col0 + col], f32(0.0)).to(f16)
        return hfrag

    @cute.jit
    def store_h(self, hfrag, acc1, tCc1, sHw, hb, wg_ni):
        """This warpgroup's half of the fp16 H chunk into H buffer hb, as 4-byte pairs at
        their (row, hidden) coordinates (the accumulator pairs (2k, 2k+1) are adjacent
        columns; a pair never straddles a 16-byte swizzle unit). Coordinates, not a
        sub-tile: the half need not be a whole number of swizzle atoms."""
        f16 = self.f16
        st2 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f16, num_bits_per_copy=32)
        h_as_acc = cute.make_tensor(hfrag.iterator, acc1.layout)  # same storage, C order
        sHv = cute.zipped_divide(sHw[None, None, hb], (1, 2))
        col0 = wg_ni * self.hc_wg
        for k in cutlass.range_constexpr(cute.size(acc1) // 2):
            r = tCc1[2 * k][0]
            c = col0 + tCc1[2 * k][1]
            src = cute.make_tensor(h_as_acc.iterator + 2 * k, cute.make_layout(2))
            dst = cute.make_tensor(sHv[(None, (r, c // 2))].iterator, cute.make_layout(2))
            cute.copy(st2, src, dst)

    @cute.jit
    def epilogue_pairs(self, accY, part: cutlass.Constexpr, nparts: cutlass.Constexpr):
        """The accumulator pairs of part `part` of `nparts` equal ranges (a block pair's
        channel half: exchange_and_finish): first pair index and count."""
        npairs = cute.size(accY) // 2 // nparts
        return part * npairs, npairs

    @cute.jit
    def load_residual(self, mX, xfrag, tCcY, row0, wg_ni, rows, k0: cutlass.Constexpr):
        """X pairs of accumulator pairs k0 .. k0 + size(xfrag) / 2 into xfrag (zero outside
        [rows, C]), as 4-byte loads from global memory: the tile the TMA brought into L2.
        Their addresses are a per-thread base plus constants, where the swizzled
        shared-memory copy would keep one live address per pair across the whole tile
        loop (hoisted by the compiler)."""
        p, f16 = self.p, self.f16
        ld2 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f16, num_bits_per_copy=32)
        mXv = cute.zipped_divide(mX, (1, 2))
        col0 = wg_ni * self.nc_wg
        for k in cutlass.range_constexpr(k0, k0 + cute.size(xfrag) // 2):
            r = row0 + tCcY[2 * k][0]
            c = col0 + tCcY[2 * k][1]
            xk = xfrag[None, k - k0]
            xk.fill(0.0)
            if r < rows and c < p.channels:
                src = cute.make_tensor(mXv[(None, (r, c // 2))].iterator, cute.make_layout(2))
                cute.copy(ld2, src, xk)

    @cute.jit
    def residual_from_smem(self, sXt, xfrag, tCcY, k0: cutlass.Constexpr):
        """X pairs of accumulator pairs k0 .. k0 + size(xfrag) / 2 from this warpgroup's
        64 rows of the X tile in shared memory (swizzled; rows past the end and channels
        past C are TMA's zero fill), as 4-byte reads: a pair never straddles a 16-byte
        swizzle unit."""
        ld2 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.f16, num_bits_per_copy=32)
        sXv = cute.zipped_divide(sXt, (1, 2))
        for k in cutlass.range_constexpr(k0, k0 + cute.size(xfrag) // 2):
            r = tCcY[2 * k][0]
            c = tCcY[2 * k][1]
            src = cute.make_tensor(sXv[(None, (r, c // 2))].iterator, cute.make_layout(2))
            cute.copy(ld2, src, xfrag[None, k - k0])

    @cute.jit
    def store_y(self, mY, accY, xfrag, tCcY, sB2, row0, wg_ni, rows, k0: cutlass.Constexpr):
        """Y = ReLU(acc + b2 + X) of accumulator pairs k0 .. k0 + size(xfrag) / 2, only
        inside [rows, C]: the pairs (2k, 2k+1) are columns (c, c + 1) with c even (the
        m64nN layout) and C is even, so Y is written as 8-byte pairs."""
        p, f32 = self.p, self.f32
        st2 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), f32, num_bits_per_copy=64)
        mYv = cute.zipped_divide(mY, (1, 2))
        ypair = cute.make_rmem_tensor(cute.make_layout(2), f32)
        col0 = wg_ni * self.nc_wg
        for k in cutlass.range_constexpr(k0, k0 + cute.size(xfrag) // 2):
            r = row0 + tCcY[2 * k][0]
            c = col0 + tCcY[2 * k][1]
            if r < rows and c < p.channels:
                for e in cutlass.range_constexpr(2):
                    y = accY[2 * k + e] + sB2[c + e] + xfrag[e, k - k0].to(f32)
                    ypair[e] = cute.arch.fmax(y, f32(0.0))
                dst = cute.make_tensor(mYv[(None, (r, c // 2))].iterator, cute.make_layout(2))
                cute.copy(st2, ypair, dst)

    @cute.jit
    def epilogue(
        self,
        mX,
        mY,
        accY,
        tCcY,
        sB2,
        xres,
        row0,
        wg_ni,
        rows,
        part: cutlass.Constexpr,
        nparts: cutlass.Constexpr,
    ):
        """Y = ReLU(acc + b2 + X) over the pairs of part `part` of `nparts`. With `xres`
        (the residual loaded at the start of the tile: early_residual) the X values are
        there already; otherwise they are loaded here in groups of EPI_PAIRS, every load of
        a group before its first Y store (Y may alias X as far as the compiler knows, so a
        load after a store would wait for it)."""
        first, npairs = self.epilogue_pairs(accY, part, nparts)
        if cutlass.const_expr(xres is not None):
            self.store_y(mY, accY, xres, tCcY, sB2, row0, wg_ni, rows, first)
        else:
            group = min(npairs, EPI_PAIRS)  # X loads in flight at once (registers)
            for g in cutlass.range_constexpr(first, first + npairs, group):
                n = min(group, first + npairs - g)
                xfrag = cute.make_rmem_tensor(cute.make_layout((2, n)), self.f16)
                self.load_residual(mX, xfrag, tCcY, row0, wg_ni, rows, g)
                self.store_y(mY, accY, xfrag, tCcY, sB2, row0, wg_ni, rows, g)


__all__ = ["HopperPlan", "SpecError", "WgmmaMlpKernel"]
