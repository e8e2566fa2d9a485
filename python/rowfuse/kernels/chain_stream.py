"""CuTe DSL generator of `chain_stream` kernels: an FFN-shaped chain at decode-sized row
counts, its weights streamed once over every SM in one launch (kernel_spec.json "mode":
"chain_stream"; src/compile/chain_stream.h decides every number, this module checks and
composes them).

Chain: [norm] -> first (linear with activations, or gated) -> hidden h (fp16) -> second
(linear with act / add-X epilogue) -> Y (fp32). Block b of `blocks` owns hidden columns
[b * slice, (b + 1) * slice). Per row tile (`tile_rows` rows, rows padded to 16):
  1. X is staged into shared memory with cp.async (zero outside [rows, C]); the first
     weight tiles are requested right after it, before it has arrived. A norm is recomputed
     per block in place (one warp per row, fp32 statistics, fp16 result).
  2. The slice of W1 (Wg and Wu) streams through a `weight_buffers`-deep cp.async ring in
     [k_chunk1 x n_chunk1] tiles: ldmatrix + mma.sync m16n8k16, fp32 accumulators; the
     hidden slice (bias, activation or act(g) * u) is rounded to fp16 in shared memory,
     zero past H.
  3. The block's rows of W2 stream through the same ring in [k_chunk2 x n_chunk2] tiles;
     per output chunk j (the blocks start at chunk b mod n_chunks2) the block's partial
     [rows, n_chunk2] (fp32) goes to scratch[b, row, col] and the warps go on to the next
     chunk: the stream never waits for another block.
  4. After the row tile the block arrives once: a barrier (every partial store issued),
     then one thread fences (release, GPU scope) and adds 1 to the tile's arrival counter.
  5. Every block then reduces its own `reduce_cols` columns of Y, [b * reduce_cols,
     (b + 1) * reduce_cols) (none where that starts past N): one thread waits until the
     arrival counter reaches `blocks` (acquire, GPU scope), a barrier, a fence (acquire),
     then the columns' partials over blocks 0, 1, ..., blocks - 1 in that order, b2, the
     epilogue (act, + X), Y, `reduce_rows` rows at a time (the plan's rows rounded up to a
     power of two, at most the tile: at one row a group holds 16x the blocks of a whole
     tile). The partials reach the reducer by cp.async through the idle weight ring, a
     group of blocks into each half in turn (the next group in flight while one is summed),
     so every SM reduces 1/blocks of Y at once and no block reduces alone (the register
     path remains for a ring too small for two groups). The block then adds
     1 to the tile's read counter (acq_rel); the block whose add takes it to `blocks`
     (every block has seen the arrivals) resets both counters to 0 for the next launch.
     Waiting for every block needs every block resident at once: the plan's grid is at
     most the SM count at one block per SM; a block that waits past the watchdog traps.
The ring (weight_copy "cp_async") is one cp.async group per tile: tile t waits for all but
the newest weight_buffers - 2 groups, one barrier of the MMA warps, then tile
t + weight_buffers - 1 is issued into the buffer tile t - 1 used (every MMA warp has passed
the barrier after reading it). With weight_copy "tma" (kernel_tma) a producer warp (warp
index `warps`) issues each tile as TMA boxes of the row-major W into stage g mod
weight_buffers (g counts the tiles over the row tiles), after waiting on the stage's empty
mbarrier, its full mbarrier expecting the tile's bytes; every MMA warp waits on the full
mbarrier, runs its MMA, and arrives once on the empty one. The tiles are unpadded and
swizzled as the Hopper shared-memory atom of their width (the TMA box writes that layout,
ldmatrix reads it), so no tile needs a barrier of the MMA warps or a copy instruction of
theirs; the hidden slice gets one barrier of its own between the two matmuls, and a
barrier of the whole block starts each row tile (the previous reduction staged partials in
the ring).

Why mma.sync with rows padded to 16 rather than CUDA cores: the error model of the chain
reference counts a dot product as 16-product MMA steps (src/chain/chain.h); the same
instruction keeps this kernel inside it at every row count up to 64, where CUDA-core FMAs
would need another bound and would be compute-bound at 16 rows or more.

Scratch (fp32 [blocks, rows, N] partials at element 0, then int32 counters [row tiles, 2]:
arrivals, reads) is the runtime's; it zeroes the counters once.

Planted faults (tests of the checks only): stream_no_fence (neither fence, the counters
relaxed), stream_early_reduce (the reducers wait for blocks - 1 arrivals: the off-by-one
that reads a partial before it is written), stream_no_reset (the last reader resets the
read counter but not the arrivals, so the next launch's reducers pass their wait at once),
stream_ring_no_wait (TMA ring only: the MMA warps read a stage before waiting on its full
mbarrier, so before its bytes land; they wait after reading, before giving the stage back,
so that no copy is still in flight when the stage is refilled or the block exits, which
would fault the launch rather than give a wrong Y; judged in a checking build too, whose
ring starts as NaN each launch and whose producer spins check_delay clocks before each row
tile's boxes, since the stages would otherwise hold the previous launch's equal weights,
or the boxes land before the MMA warps first read). The reduction's faults are judged in a
checking build (check_delay > 0: the last block's threads spin that many SM clocks before
its first partial store of a row tile, while every other block runs ahead): a reducer that
does not wait for every block's partial then reads the NaN the check writes into the
partials before each replay rather than the previous launch's equal value.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync
from cutlass.utils import LayoutEnum

from rowfuse.kernels import rowfuse_hopper as rh
from rowfuse.kernels.chain_mma import (
    _act,
    _int,
    _stage_from_spec,
    row_norm_stats,
    wf_extent,
    wh_extent,
)
from rowfuse.kernels.rowfuse_kernels import (
    WATCHDOG_NS,
    SpecError,
    TileOps,
    _vec_elems,
    check_spin,
    fake_tensor,
    mma_sync_tiled,
)

MODE = "chain_stream"
# The ordered reduction, when the weight ring cannot hold two groups of partials (see
# StreamPlan.reduce_group): up to REDUCE_BATCH blocks' partial loads in flight, within
# REDUCE_REGS registers a thread
REDUCE_BATCH = 8
REDUCE_REGS = 64
# Blocks a reduction group holds at most (its copies and adds are unrolled)
REDUCE_GROUP_MAX = 128
FAULTS = ("", "stream_no_fence", "stream_early_reduce", "stream_no_reset", "stream_ring_no_wait")
# The MMA warps' barrier (named; 0 is the whole block's)
MMA_BARRIER = 1
# the spec's x_lead (TMA ring): the producer issues that many tiles of a row tile, then
# waits (named barrier X_BARRIER, every thread of the block) until the MMA warps have X in
# shared memory: every block's first burst of boxes would otherwise queue ahead of the few
# bytes of X in the memory system, and the MMA warps would wait behind the grid's first fill
X_BARRIER = 2
# Counters per row tile in the scratch: arrivals, reads
COUNTERS_PER_TILE = 2
# The weight copies: cp.async by every MMA thread, or TMA by a producer warp
COPIES = ("cp_async", "tma")
# A TMA ring's alignment: its stages, each matrix's tile in a stage, the shared-memory base
TMA_ALIGN = 1024
# two fp16 quiet NaNs in one 32-bit word: a checking build's ring before the first boxes
NAN_PAIR = 0x7E007E00


def _up(a: int, b: int) -> int:
    return (a + b - 1) // b * b


@dataclass(frozen=True)
class StreamPlan:
    """Compile-time geometry of one chain_stream kernel, exactly as the C planner wrote it."""

    name: str
    in_width: int
    out_width: int
    hidden: int
    tile_rows: int
    warps: int
    smem_bytes: int
    blocks: int
    slice: int
    norm: object  # Stage or None
    first: object
    second: object
    k_chunk1: int
    n_chunk1: int
    k_chunk2: int
    n_chunk2: int
    n_chunks2: int
    weight_buffers: int
    x_stride: int
    x_offset: int
    h_offset: int
    h_stride: int
    stats_offset: int
    weight_smem_offset: int
    ring_bytes: int
    reduce_cols: int
    reduce_rows: int
    smem_pad: int
    fault: str = ""
    # a checking build (0 = none): SM clocks the last block's threads spin before its first
    # partial store of a row tile, so a reducer that does not wait for every block reads the
    # poison
    check_delay: int = 0
    weight_copy: str = "cp_async"  # COPIES
    mbar_offset: int = 0  # tma: full[weight_buffers], then empty[weight_buffers]
    # X not resident: each W1 tile's ring stage also holds X's [tile_rows x k_chunk1] chunk
    # (rows x_stride apart, after the weight tiles); the norm's statistics come from X in
    # global memory and the norm is applied to each chunk in registers (cp.async ring only)
    x_stream: bool = False
    x_lead: int = 0
    # a timeline build: `stamps` global-timer stamps per block and row tile after the
    # tile's counters (chain_stream.h RF_STREAM_STAMPS says which); 0 = none
    stamps: int = 0

    @property
    def tma(self) -> bool:
        return self.weight_copy == "tma"

    @property
    def threads(self) -> int:
        """The MMA warps, and a TMA plan's producer warp (warp index `warps`)."""
        return 32 * (self.warps + (1 if self.tma else 0))

    def tile_bytes(self, mats: int, kc: int, nc: int) -> int:
        """Shared-memory bytes of a ring tile of `mats` [kc x nc] fp16 matrices: rows padded
        by smem_pad (cp.async), or each matrix unpadded and TMA_ALIGN aligned (TMA)."""
        if self.tma:
            return mats * _up(kc * nc * 2, TMA_ALIGN)
        return mats * kc * (nc + self.smem_pad) * 2

    @property
    def mma_threads(self) -> int:
        return 32 * self.warps

    @property
    def counters_per_tile(self) -> int:
        """int32 words of scratch per row tile after the partials: the arrival and read
        counters, then a timeline build's stamps of every block."""
        return COUNTERS_PER_TILE + self.blocks * self.stamps

    @property
    def x_chunk_bytes(self) -> int:
        """Bytes of X's chunk in a W1 stage of the ring (x_stream), else 0."""
        return self.tile_rows * self.x_stride * 2 if self.x_stream else 0

    @property
    def reduce_group(self) -> int:
        """Blocks' partials of a block's reduce columns ([reduce_rows, reduce_cols] fp32
        each) that half of the weight ring holds: the reducer copies one group into each half
        in turn (cp.async, the next group in flight while the last is summed); 0 when a half
        holds none (the reduction then loads the partials into registers)."""
        return min(
            self.blocks,
            REDUCE_GROUP_MAX,
            self.weight_buffers * self.ring_bytes // (2 * self.reduce_elems * 4),
        )

    @property
    def reduce_elems(self) -> int:
        """Elements of one reduction pass: [reduce_rows, reduce_cols]."""
        return self.reduce_rows * self.reduce_cols

    @property
    def reduce_per(self) -> int:
        """A thread's elements of a pass (element tid + e * threads, those below
        reduce_elems)."""
        return -(-self.reduce_elems // self.mma_threads)

    @property
    def gated(self) -> bool:
        return self.first.op == "gated"

    @property
    def x_cols(self) -> int:
        return _up(self.in_width, self.k_chunk1)

    @property
    def warps_m(self) -> int:
        m = self.tile_rows // 16
        return max(d for d in range(1, m + 1) if m % d == 0 and d <= self.warps)

    @property
    def warps_n(self) -> int:
        return self.warps // self.warps_m

    def warps_n_of(self, n: int) -> int:
        q = n // 16
        return max(d for d in range(1, self.warps_n + 1) if q % d == 0)

    @property
    def tiles1(self) -> int:
        return (self.slice // self.n_chunk1) * (self.x_cols // self.k_chunk1)

    @property
    def tiles2(self) -> int:
        return self.n_chunks2 * (self.slice // self.k_chunk2)

    def wh_extent(self) -> int:
        return wh_extent((self.first, self.second))

    def wf_extent(self) -> int:
        stages = (self.first, self.second) + ((self.norm,) if self.norm is not None else ())
        return wf_extent(stages, lambda _: self.in_width)

    @classmethod
    def from_spec(cls, k: dict, smem_pad: int) -> StreamPlan:
        name = k.get("name", "?")
        if k.get("mode") != MODE:
            raise SpecError(f"{name}: mode {k.get('mode')!r} is not {MODE}")
        stages = [_stage_from_spec(s, i, name) for i, s in enumerate(k.get("stages") or [])]
        ints = {
            key: _int(k, key, name)
            for key in (
                "in_width",
                "out_width",
                "tile_rows",
                "warps",
                "smem_bytes",
                "blocks",
                "slice",
                "k_chunk1",
                "n_chunk1",
                "k_chunk2",
                "n_chunk2",
                "n_chunks2",
                "weight_buffers",
                "x_offset",
                "x_stride",
                "h_offset",
                "h_stride",
                "stats_offset",
                "weight_smem_offset",
                "ring_bytes",
                "reduce_cols",
                "reduce_rows",
            )
        }
        norm, first, second = (_int(k, key, name) for key in ("norm", "first", "second"))
        if not (len(stages) == second + 1 and first == second - 1 and norm in (-1, 0)):
            raise SpecError(
                f"{name}: norm/first/second {norm}/{first}/{second} do not index the "
                f"{len(stages)} stages as [norm] -> first -> second"
            )
        if (norm == 0) != (first == 1):
            raise SpecError(f"{name}: the first matmul follows the norm exactly when there is one")
        fault = k.get("fault", "")
        if fault not in FAULTS:
            raise SpecError(f"{name}: fault {fault!r}; this generator plants {FAULTS[1:]}")
        copy = k.get("weight_copy", "cp_async")
        if copy not in COPIES:
            raise SpecError(f"{name}: weight_copy {copy!r} is not one of {COPIES}")
        if fault == "stream_ring_no_wait" and copy != "tma":
            raise SpecError(f"{name}: stream_ring_no_wait is planted in the TMA ring only")
        plan = cls(
            name=name,
            hidden=stages[first].n,
            norm=stages[0] if norm == 0 else None,
            first=stages[first],
            second=stages[second],
            smem_pad=smem_pad,
            fault=fault,
            check_delay=k.get("check_delay", 0),
            weight_copy=copy,
            mbar_offset=_int(k, "mbar_offset", name) if copy == "tma" else 0,
            x_stream=bool(k.get("x_stream", False)),
            x_lead=int(k.get("x_lead", 0)),
            stamps=_int(k, "stamps", name) if k.get("timeline") else 0,
            **ints,
        )
        if _int(k, "threads", name) != plan.threads:
            raise SpecError(f"{name}: threads {k['threads']} is not 32 * warps ({plan.threads})")
        plan.check()
        return plan

    def check(self) -> None:
        """Every rule the generator relies on; SpecError naming the first broken one."""
        n, f, s, nm = self.name, self.first, self.second, self.norm
        N = self.out_width
        if self.tile_rows not in (16, 32, 64) or self.warps not in (4, 8):
            raise SpecError(f"{n}: tile_rows {self.tile_rows} / warps {self.warps} unsupported")
        if nm is not None and (nm.op != "norm" or nm.src != 0):
            raise SpecError(f"{n}: stage 0 must be a norm of X")
        if nm is not None and nm.kind not in ("layernorm", "rmsnorm"):
            raise SpecError(
                f"{n}: the streaming kernel computes layernorm or rmsnorm, not {nm.kind}"
            )
        src = 1 if nm is not None else 0
        if f.op not in ("linear", "gated") or f.src != src or f.k != self.in_width:
            raise SpecError(f"{n}: the first stage must be a linear or gated stage of value {src}")
        if any(op != "act" for op, _ in f.epilogue):
            raise SpecError(f"{n}: the first linear's epilogue may hold activations only")
        if s.op != "linear" or s.src != f.dst or s.k != f.n or s.n != self.out_width:
            raise SpecError(f"{n}: the second stage must be a linear of the hidden into Y")
        if any(op == "mul" or (op == "add" and v != 0) for op, v in s.epilogue):
            raise SpecError(f"{n}: the second linear's epilogue may hold act and add of X only")
        for name, v in (("slice", self.slice), ("k_chunk1", self.k_chunk1),
                        ("n_chunk1", self.n_chunk1), ("k_chunk2", self.k_chunk2),
                        ("n_chunk2", self.n_chunk2)):  # fmt: skip
            if v < 16 or v % 16:
                raise SpecError(f"{n}: {name} {v} must be a positive multiple of 16")
        if self.slice % self.n_chunk1 or self.slice % self.k_chunk2:
            raise SpecError(f"{n}: slice {self.slice} must be whole n_chunk1 and k_chunk2")
        if self.blocks * self.slice < self.hidden or (self.blocks - 1) * self.slice >= self.hidden:
            raise SpecError(
                f"{n}: {self.blocks} blocks of {self.slice} must cover hidden {self.hidden}, "
                "every block holding a column"
            )
        if self.reduce_cols < 8 or self.reduce_cols % 8 or self.blocks * self.reduce_cols < N:
            raise SpecError(
                f"{n}: reduce_cols {self.reduce_cols} must be a multiple of 8 and "
                f"{self.blocks} blocks of it must cover the {N} output columns"
            )
        rr = self.reduce_rows
        if rr < 1 or rr & (rr - 1) or self.tile_rows % rr:
            raise SpecError(f"{n}: reduce_rows {rr} must be a power of two dividing the tile")
        if self.n_chunks2 * self.n_chunk2 < self.out_width:
            raise SpecError(f"{n}: n_chunks2 x n_chunk2 does not cover out_width")
        if self.weight_buffers < 2 or self.tiles1 + self.tiles2 < self.weight_buffers - 1:
            raise SpecError(f"{n}: weight_buffers {self.weight_buffers} (2 or more, fewer tiles)")
        mats = 2 if self.gated else 1
        r1 = self.tile_bytes(mats, self.k_chunk1, self.n_chunk1) + self.x_chunk_bytes
        r2 = self.tile_bytes(1, self.k_chunk2, self.n_chunk2)
        ring_align, usable = 16, self.smem_bytes
        regions = [
            ("h", self.h_offset, self.tile_rows * self.h_stride * 2, 16),
            ("stats", self.stats_offset, self.tile_rows * 8, 16),
        ]
        if self.x_lead < 0 or (self.x_lead and not self.tma):
            raise SpecError(f"{n}: x_lead {self.x_lead}: the TMA ring's producer only, >= 0")
        if self.x_stream:
            if self.tma:
                raise SpecError(f"{n}: x_stream streams X through the cp.async ring only")
        else:
            regions.insert(0, ("x", self.x_offset, self.tile_rows * self.x_stride * 2, 16))
        if self.tma:
            if self.hidden % 8 or N % 8:
                raise SpecError(f"{n}: TMA needs the hidden {self.hidden} and N {N} in 8s")
            # the base is aligned inside smem_bytes (TMA_ALIGN bytes more than the layout)
            ring_align, usable = TMA_ALIGN, self.smem_bytes - TMA_ALIGN
            regions.append(("mbarriers", self.mbar_offset, 16 * self.weight_buffers, 8))
        regions.append(
            ("ring", self.weight_smem_offset, self.weight_buffers * self.ring_bytes, ring_align)
        )
        for what, off, size, align in regions:
            if off < 0 or off % align or off + size > usable:
                raise SpecError(
                    f"{n}: the {what} region [{off}, {off + size}) is not {align}-byte "
                    f"aligned or ends past the {usable} bytes of shared memory it may use"
                )
        ends = sorted((off, off + size) for _, off, size, _ in regions)
        if any(a[1] > b[0] for a, b in zip(ends, ends[1:], strict=False)):
            raise SpecError(f"{n}: shared-memory regions overlap")
        if self.ring_bytes < max(r1, r2) or self.ring_bytes % ring_align:
            raise SpecError(
                f"{n}: ring_bytes {self.ring_bytes} < a tile ({max(r1, r2)} bytes) or not "
                f"{ring_align}-byte aligned"
            )
        x_cover = self.k_chunk1 if self.x_stream else self.x_cols
        if self.x_stride < x_cover or (self.x_stride * 2) % 16:
            raise SpecError(f"{n}: x_stride {self.x_stride} must cover {x_cover} columns")
        if self.h_stride < self.slice or (self.h_stride * 2) % 16:
            raise SpecError(f"{n}: h_stride {self.h_stride} must cover the slice")
        for st in (f, s) + ((nm,) if nm is not None else ()):
            for off in (st.w, st.wg, st.wu, st.b, st.bg, st.bu, st.gamma, st.beta):
                if off >= 0 and off % 8:
                    raise SpecError(f"{n}: weight offset {off} is not a multiple of 8 elements")


class StreamKernel(TileOps):
    """Generates the chain_stream kernel of a `StreamPlan` (see module docstring)."""

    def __init__(self, plan: StreamPlan):
        self.p = plan
        self.threads = plan.mma_threads  # TileOps' staging: the MMA threads copy
        self.fault = ""  # TileOps' staging fault; this kernel's own are plan.fault
        self.tm = plan.tile_rows

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mS: cute.Tensor,
        rows: cutlass.Int32,
        grid: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        # the plan needs one resident block per SM (its grid is about the SM count): ptxas
        # may take registers up to that rather than spill for more blocks
        p = self.p
        if cutlass.const_expr(p.tma):
            f, s2 = p.first, p.second
            C, H, N = p.in_width, p.hidden, p.out_width
            l1 = self.tma_layout(p.n_chunk1, p.k_chunk1)
            l2 = self.tma_layout(p.n_chunk2, p.k_chunk2)
            g2s = cpasync.CopyBulkTensorTileG2SOp()
            # W [K, N] seen as (N, K), N contiguous: a box is [k_chunk x n_chunk] of W
            tmas = [
                cpasync.make_tiled_tma_atom(
                    g2s,
                    cute.make_tensor(mWh.iterator + off, cute.make_layout((H, C), stride=(1, H))),
                    l1,
                    (p.n_chunk1, p.k_chunk1),
                )
                for off in ((f.w,) if f.op == "linear" else (f.wg, f.wu))
            ]
            tma2, t2 = cpasync.make_tiled_tma_atom(
                g2s,
                cute.make_tensor(mWh.iterator + s2.w, cute.make_layout((N, H), stride=(1, N))),
                l2,
                (p.n_chunk2, p.k_chunk2),
            )
            tma1, t1 = tmas[0]
            tmau, tu = tmas[-1]
            self.kernel_tma(tma1, t1, tmau, tu, tma2, t2, mX, mWf, mY, mS, rows).launch(
                grid=(grid, 1, 1),
                block=(p.threads, 1, 1),
                smem=p.smem_bytes,
                stream=stream,
                min_blocks_per_mp=1,
            )
        else:
            self.kernel(mX, mWh, mWf, mY, mS, rows).launch(
                grid=(grid, 1, 1),
                block=(p.threads, 1, 1),
                smem=p.smem_bytes,
                stream=stream,
                min_blocks_per_mp=1,
            )

    def tma_layout(self, nc: int, kc: int):
        """A TMA ring tile of W, (nc, kc) with N contiguous: what the TMA box writes and what
        ldmatrix reads, one layout for both. At 16, 32 or 64 columns the Hopper shared-memory
        atom of that width (32-, 64-, 128-byte swizzle); at other widths (48) rows of nc
        unswizzled (a swizzle atom's width would split the N mode, which the tiled MMA does
        not partition; rows of 96 bytes cost ldmatrix at most 2-way bank conflicts)."""
        if nc & (nc - 1):
            return cute.make_layout((nc, kc), stride=(1, nc))
        staged = sm90.make_smem_layout_b(LayoutEnum.COL_MAJOR, (64, nc, kc), cutlass.Float16, 1)
        return cute.slice_(staged, (None, None, 0))

    def tma_ring(self, base, lay, mat: int, nc: int, kc: int):
        """Matrix `mat`'s tiles of the TMA ring: (nc, kc, weight_buffers), stages
        ring_bytes apart, the swizzle on the pointer."""
        p = self.p
        off = p.weight_smem_offset + mat * _up(kc * nc * 2, TMA_ALIGN)
        swizzled = nc & (nc - 1) == 0
        o = lay.outer if swizzled else lay
        staged = cute.make_layout(
            (o.shape[0], o.shape[1], p.weight_buffers),
            stride=(o.stride[0], o.stride[1], p.ring_bytes // 2),
        )
        ptr = cute.recast_ptr(base + off, lay.inner if swizzled else None, dtype=cutlass.Float16)
        return cute.make_tensor(ptr, staged)

    # ------------------------------------------------------------------ geometry helpers
    def tiled(self, n: int):
        """The tiled MMA over [tile_rows, n] and its ldmatrix copies (module docstring)."""
        p = self.p
        wn = p.warps_n_of(n)
        tiled_mma, s2r_a, s2r_b = mma_sync_tiled(p.warps_m, wn)
        return tiled_mma, s2r_a, s2r_b, 32 * p.warps_m * wn

    def ring(self, base, mat: int, kc: int, nc: int):
        """Ring tiles of matrix `mat` at [kc x nc]: [kc, nc, weight_buffers]."""
        p = self.p
        rs = nc + p.smem_pad
        ptr = cute.recast_ptr(
            base + p.weight_smem_offset + mat * kc * rs * 2, dtype=cutlass.Float16
        )
        return cute.make_tensor(
            ptr, cute.make_layout((kc, nc, p.weight_buffers), stride=(rs, 1, p.ring_bytes // 2))
        )

    # ------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mS: cute.Tensor,
        rows: cutlass.Int32,
    ):
        p, tm = self.p, self.tm
        f, s2 = p.first, p.second
        C, H, N = p.in_width, p.hidden, p.out_width
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        base = smem.allocate(p.smem_bytes, 128)
        sX, sH = self.views(base)
        offs = (f.w,) if f.op == "linear" else (f.wg, f.wu)
        gW1 = [
            cute.make_tensor(mWh.iterator + off, cute.make_layout((C, H), stride=(H, 1)))
            for off in offs
        ]
        gW2 = cute.make_tensor(mWh.iterator + s2.w, cute.make_layout((H, N), stride=(N, 1)))
        ring1 = [self.ring(base, m, p.k_chunk1, p.n_chunk1) for m in range(len(offs))]
        ring2 = self.ring(base, 0, p.k_chunk2, p.n_chunk2)
        h0 = bid * p.slice
        ctx = (mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid)
        for rt in cutlass.range((rows + tm - 1) // tm, unroll=1):
            self.row_tile(ctx, rt, rows, 0)

    @cute.kernel
    def kernel_tma(
        self,
        tma1: cute.CopyAtom,
        t1: cute.Tensor,
        tmau: cute.CopyAtom,
        tu: cute.Tensor,
        tma2: cute.CopyAtom,
        t2: cute.Tensor,
        mX: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mS: cute.Tensor,
        rows: cutlass.Int32,
    ):
        """The kernel with a TMA weight ring (weight_copy "tma"): the producer warp (warp
        index `warps`) streams the block's tiles, the MMA warps run the row tile as the
        cp.async kernel does, waiting on each stage's full mbarrier and releasing it with one
        arrival a warp. Per row tile a barrier of the whole block first: the previous tile's
        reduction, which stages partials in the ring, is done before the producer refills it
        (and the MMA warps fenced their generic writes to it against the async proxy)."""
        p, tm = self.p, self.tm
        gated = p.gated
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()
        base = smem.allocate(p.smem_bytes - TMA_ALIGN, TMA_ALIGN)
        full, empty = self.mbarriers(base)
        if warp == p.warps:
            cpasync.prefetch_descriptor(tma1)
            if cutlass.const_expr(gated):
                cpasync.prefetch_descriptor(tmau)
            cpasync.prefetch_descriptor(tma2)
            with cute.arch.elect_one():
                for st in cutlass.range_constexpr(p.weight_buffers):
                    cute.arch.mbarrier_init(full + st, 1)
                    cute.arch.mbarrier_init(empty + st, p.warps)
        if cutlass.const_expr(p.check_delay > 0):
            # a checking build: the ring starts as NaN each launch (never the previous
            # launch's equal weights), and the producer's first boxes land late (produce)
            self.poison_ring(base, tid)
            cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.mbarrier_init_fence()
        cute.arch.barrier()  # the mbarriers initialised, for every warp
        sX, sH = self.views(base)
        mats = 2 if gated else 1
        l1 = self.tma_layout(p.n_chunk1, p.k_chunk1)  # (as the host's TMA atoms were made)
        l2 = self.tma_layout(p.n_chunk2, p.k_chunk2)
        ring1 = [self.tma_ring(base, l1, m, p.n_chunk1, p.k_chunk1) for m in range(mats)]
        ring2 = self.tma_ring(base, l2, 0, p.n_chunk2, p.k_chunk2)
        h0 = bid * p.slice
        ctx = (mX, mWf, mY, mS, None, None, ring1, ring2, sX, sH, base, h0, bid, tid)
        # the producer's TMA partitions: W tiles (n tile, k tile) -> ring stages
        one = cute.make_layout(1)
        parts = []
        for m, (tma, tw) in enumerate(((tma1, t1), (tmau, tu))[:mats]):
            g = cute.local_tile(tw, (p.n_chunk1, p.k_chunk1), (None, None))
            parts.append(
                cpasync.tma_partition(
                    tma, 0, one, cute.group_modes(ring1[m], 0, 2), cute.group_modes(g, 0, 2)
                )
            )
        g2 = cute.local_tile(t2, (p.n_chunk2, p.k_chunk2), (None, None))
        parts.append(
            cpasync.tma_partition(
                tma2, 0, one, cute.group_modes(ring2, 0, 2), cute.group_modes(g2, 0, 2)
            )
        )
        atoms = (tma1, tmau)[:mats] + (tma2,)
        for rt in cutlass.range((rows + tm - 1) // tm, unroll=1):
            g0 = rt * (p.tiles1 + p.tiles2)
            cute.arch.barrier()  # the ring's last readers (the previous reduction) are done
            if warp == p.warps:
                self.produce(atoms, parts, full, empty, g0, bid)
            else:
                self.row_tile(ctx, rt, rows, g0)

    @cute.jit
    def poison_ring(self, base, tid):
        """A checking build's ring: every stage fp16 NaN (generic stores of every thread),
        so a warp that reads a stage before its full mbarrier says the bytes landed sees
        NaN in its products."""
        p = self.p
        words = p.weight_buffers * p.ring_bytes // 4
        ring = cute.make_tensor(
            cute.recast_ptr(base + p.weight_smem_offset, dtype=cutlass.Int32),
            cute.make_layout(words),
        )
        for i in cutlass.range(tid, words, 32 * (p.warps + 1)):
            ring[i] = cutlass.Int32(NAN_PAIR)

    def views(self, base):
        """X [tile_rows, x_cols] and the hidden slice [tile_rows, slice] in shared memory;
        with x_stream X's chunks in the ring instead, [tile_rows, k_chunk1, weight_buffers]
        (a W1 stage's X after its weight tiles)."""
        p, tm = self.p, self.tm
        if cutlass.const_expr(p.x_stream):
            mats = 2 if p.gated else 1
            off = p.weight_smem_offset + mats * p.k_chunk1 * (p.n_chunk1 + p.smem_pad) * 2
            sX = cute.make_tensor(
                cute.recast_ptr(base + off, dtype=cutlass.Float16),
                cute.make_layout(
                    (tm, p.k_chunk1, p.weight_buffers),
                    stride=(p.x_stride, 1, p.ring_bytes // 2),
                ),
            )
        else:
            sX = cute.make_tensor(
                cute.recast_ptr(base + p.x_offset, dtype=cutlass.Float16),
                cute.make_layout((tm, p.x_cols), stride=(p.x_stride, 1)),
            )
        sH = cute.make_tensor(
            cute.recast_ptr(base + p.h_offset, dtype=cutlass.Float16),
            cute.make_layout((tm, p.slice), stride=(p.h_stride, 1)),
        )
        return sX, sH

    def mbarriers(self, base):
        """The TMA ring's full and empty mbarriers (weight_buffers each)."""
        full = cute.recast_ptr(base + self.p.mbar_offset, dtype=cutlass.Int64)
        return full, full + self.p.weight_buffers

    @cute.jit
    def row_tile(self, ctx, rt, rows, g0):
        """Row tile rt on the MMA warps (module docstring, 1-5): X staged (cp.async ring:
        the first weight tiles issued behind it), the norm, the two matmuls (their tiles from
        g0 on in a TMA ring), the arrival and this block's share of the reduction (a TMA ring:
        then the fence of its generic writes to the ring against the next row tile's TMA)."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, tm = self.p, self.tm
        C, nbuf = p.in_width, p.weight_buffers
        row0 = rt * tm
        nrows = rows - row0
        xrows = (row0, nrows)
        self.stamp(ctx, rows, rt, 0)
        if cutlass.const_expr(p.x_stream):
            for t in cutlass.range_constexpr(nbuf - 1):  # the first weights and X's chunks
                self.issue(ctx, t, xrows)
                cute.arch.cp_async_commit_group()
            if cutlass.const_expr(p.norm is not None):
                self.norm_stats(ctx, row0, nrows)  # from X in global memory, meanwhile
        else:
            self.stage(mX, sX, row0, nrows, 0, C, tm, p.x_cols, _vec_elems(C, 2), tid)
            cute.arch.cp_async_commit_group()
            if cutlass.const_expr(p.tma):
                cute.arch.cp_async_wait_group(0)
                if cutlass.const_expr(p.x_lead > 0):
                    # this warp's part of X landed: the producer's boxes past x_lead may go
                    cute.arch.barrier_arrive(
                        barrier_id=X_BARRIER, number_of_threads=p.mma_threads + 32
                    )
            else:
                for t in cutlass.range_constexpr(nbuf - 1):  # the first weights, before X
                    self.issue(ctx, t, xrows)
                    cute.arch.cp_async_commit_group()
                cute.arch.cp_async_wait_group(nbuf - 1)
            self.mma_barrier()
            if cutlass.const_expr(p.norm is not None):
                self.norm_x(ctx)
        self.stamp(ctx, rows, rt, 1)
        self.gemm1(ctx, p.x_cols // p.k_chunk1, g0, xrows)
        self.stamp(ctx, rows, rt, 2)
        if cutlass.const_expr(p.tma):
            self.mma_barrier()  # the hidden slice, for every MMA warp
        self.gemm2(ctx, p.slice // p.k_chunk2, rows, row0, nrows, g0)
        self.stamp(ctx, rows, rt, 3)
        if cutlass.const_expr(not p.tma):
            cute.arch.cp_async_wait_group(0)
        self.arrive(ctx, rt, rows)
        self.stamp(ctx, rows, rt, 4)
        self.reduce(ctx, rt, rows, row0, nrows)
        self.stamp(ctx, rows, rt, 6)
        if cutlass.const_expr(p.tma):
            # the reduction's generic writes to the ring, ordered before the TMA's
            cute.arch.fence_proxy("async.shared", space="cta")

    # the residual MLP's mbarrier wait (a watchdog: a trap rather than a hang)
    wait = rh.WgmmaMlpKernel.wait

    @cute.jit
    def produce(self, atoms, parts, full, empty, g0, bid):
        """The producer warp: the block's tiles of this row tile (W1's, then W2's, the order
        `issue` and the MMA warps take them), tile t into stage (g0 + t) mod weight_buffers
        once every MMA warp has released that stage's previous tile; the full mbarrier
        expects the tile's bytes (TMA counts a box's zero fill past K and N). After the
        first x_lead tiles (where the spec has them) it waits until X is in shared memory
        (X_BARRIER)."""
        p = self.p
        mats = len(atoms) - 1
        n0 = bid * (p.slice // p.n_chunk1)  # the block's first n tile of W1
        k0 = bid * (p.slice // p.k_chunk2)  # the block's first k tile of W2
        bytes1 = mats * p.k_chunk1 * p.n_chunk1 * 2
        bytes2 = p.k_chunk2 * p.n_chunk2 * 2
        if cutlass.const_expr(p.check_delay > 0):
            check_spin(p.check_delay)  # a checking build: the row tile's boxes land late
        total = p.tiles1 + p.tiles2
        lead = min(p.x_lead, total)
        if cutlass.const_expr(lead > 0):
            for t in cutlass.range(lead, unroll=1):
                self.box(atoms, parts, full, empty, g0, t, bid, n0, k0, bytes1, bytes2)
            # X is in shared memory (the MMA warps' arrival after its copy): the rest follows
            cute.arch.barrier(barrier_id=X_BARRIER, number_of_threads=p.mma_threads + 32)
        for t in cutlass.range(lead, total, unroll=1):
            self.box(atoms, parts, full, empty, g0, t, bid, n0, k0, bytes1, bytes2)

    @cute.jit
    def box(self, atoms, parts, full, empty, g0, t, bid, n0, k0, bytes1, bytes2):
        """The producer's tile t of the row tile (produce): its stage once released, the
        full mbarrier armed with its bytes, its TMA box(es)."""
        p = self.p
        mats = len(atoms) - 1
        nbuf = p.weight_buffers
        nk1 = p.x_cols // p.k_chunk1
        nk2 = p.slice // p.k_chunk2
        g = g0 + t
        st = g % nbuf
        self.wait(empty + st, ((g // nbuf) % 2) ^ 1)
        if t < p.tiles1:
            nj = t // nk1
            kj = t - nj * nk1
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full + st, bytes1)
            for m in cutlass.range_constexpr(mats):
                ps, pg = parts[m]
                cute.copy(atoms[m], pg[(None, n0 + nj, kj)], ps[(None, st)],
                          tma_bar_ptr=full + st)  # fmt: skip
        else:
            u = t - p.tiles1
            jj = u // nk2
            kj = u - jj * nk2
            j = (jj + bid) % p.n_chunks2
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full + st, bytes2)
            ps, pg = parts[mats]
            cute.copy(atoms[mats], pg[(None, j, k0 + kj)], ps[(None, st)],
                      tma_bar_ptr=full + st)  # fmt: skip

    @cute.jit
    def take(self, ctx, g0, t, xrows):
        """Tile t of the row tile is in shared memory for this warp: TMA, its stage's full
        mbarrier; cp.async, the ring's step (which also issues a later tile; xrows: the row
        tile's first row and the rows left, for X's chunks with x_stream)."""
        p = self.p
        if cutlass.const_expr(p.tma):
            if cutlass.const_expr(p.fault != "stream_ring_no_wait"):
                full, _ = self.mbarriers(ctx[10])  # (ctx[10]: the shared-memory base)
                g = g0 + t
                self.wait(full + g % p.weight_buffers, (g // p.weight_buffers) % 2)
        else:
            self.step(ctx, t, xrows)

    @cute.jit
    def give(self, ctx, g0, t):
        """TMA: this warp is done reading tile t's stage (one arrival a warp on its empty
        mbarrier, after every lane's reads); cp.async: nothing (the next step's barrier)."""
        p = self.p
        if cutlass.const_expr(p.tma):
            full, empty = self.mbarriers(ctx[10])
            if cutlass.const_expr(p.fault == "stream_ring_no_wait"):
                # the planted fault's wait, after the reads it should have come before: the
                # stage's bytes still land before it is given back (no copy in flight into a
                # stage being refilled or into a block that has exited)
                g = g0 + t
                self.wait(full + g % p.weight_buffers, (g // p.weight_buffers) % 2)
            cute.arch.sync_warp()
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(empty + (g0 + t) % p.weight_buffers)

    @cute.jit
    def b_tile(self, ring, g0, t, kc: cutlass.Constexpr, nc: cutlass.Constexpr):
        """Tile t's B operand (nc, kc) in its ring buffer."""
        p = self.p
        if cutlass.const_expr(p.tma):
            return ring[None, None, (g0 + t) % p.weight_buffers]
        return cute.make_tensor(
            ring[None, None, t % p.weight_buffers].iterator,
            cute.make_layout((nc, kc), stride=(1, nc + p.smem_pad)),
        )

    @cute.jit
    def mma_barrier(self):
        cute.arch.barrier(barrier_id=MMA_BARRIER, number_of_threads=self.p.mma_threads)

    @cute.jit
    def counter(self, mS, rows, rt, which: cutlass.Constexpr):
        """Row tile rt's counter `which` (0: arrivals, 1: reads) in the scratch."""
        p = self.p
        off = p.blocks * rows * p.out_width + rt * p.counters_per_tile + which
        return cute.recast_ptr(mS.iterator + off, dtype=cutlass.Int32)

    @cute.jit
    def stamp(self, ctx, rows, rt, i: cutlass.Constexpr):
        """A timeline build: thread 0 writes the global timer's low 32 bits (ns) as stamp i
        of this block's row tile rt (chain_stream.h RF_STREAM_STAMPS); nothing otherwise."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        if cutlass.const_expr(p.stamps > 0):
            if tid == 0:
                ptr = self.counter(mS, rows, rt, COUNTERS_PER_TILE + bid * p.stamps + i)
                cute.make_tensor(ptr, cute.make_layout(1))[0] = cute.arch.globaltimer_lo()

    @cute.jit
    def issue(self, ctx, t, xrows):
        """cp.async of weight tile t (of the block's sequence: W1 tiles, then W2 tiles) into
        ring buffer t mod weight_buffers; zero fill outside [K, N]. With x_stream a W1 tile
        brings X's chunk of its k tile (rows xrows = (first, left) of the row tile; zero
        outside [rows, C])."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        C, H, N = p.in_width, p.hidden, p.out_width
        nk1 = p.x_cols // p.k_chunk1
        nk2 = p.slice // p.k_chunk2
        buf = t % p.weight_buffers
        if t < p.tiles1:
            nj = t // nk1
            kj = t - nj * nk1
            col = h0 + nj * p.n_chunk1
            for m in cutlass.range_constexpr(len(gW1)):
                self.stage(
                    gW1[m],
                    ring1[m][None, None, buf],
                    kj * p.k_chunk1,
                    C - kj * p.k_chunk1,
                    col,
                    H - col,
                    p.k_chunk1,
                    p.n_chunk1,
                    _vec_elems(H, 2),
                    tid,
                )
            if cutlass.const_expr(p.x_stream):
                row0, nrows = xrows
                self.stage(
                    mX,
                    sX[None, None, buf],
                    row0,
                    nrows,
                    kj * p.k_chunk1,
                    C - kj * p.k_chunk1,
                    self.tm,
                    p.k_chunk1,
                    _vec_elems(C, 2),
                    tid,
                )
        else:
            if t < p.tiles1 + p.tiles2:
                u = t - p.tiles1
                jj = u // nk2
                kj = u - jj * nk2
                j = (jj + bid) % p.n_chunks2
                krow = h0 + kj * p.k_chunk2
                self.stage(
                    gW2,
                    ring2[None, None, buf],
                    krow,
                    H - krow,
                    j * p.n_chunk2,
                    N - j * p.n_chunk2,
                    p.k_chunk2,
                    p.n_chunk2,
                    _vec_elems(N, 2),
                    tid,
                )

    @cute.jit
    def step(self, ctx, t, xrows):
        """Tile t is in shared memory for every warp; tile t + weight_buffers - 1 is issued
        into the buffer tile t - 1 used."""
        p = self.p
        cute.arch.cp_async_wait_group(p.weight_buffers - 2)
        self.mma_barrier()
        self.issue(ctx, t + p.weight_buffers - 1, xrows)
        cute.arch.cp_async_commit_group()  # (empty past the last tile)

    @cute.jit
    def norm_x(self, ctx):
        """LayerNorm / RMSNorm of the staged X in place: one warp per row, statistics in
        fp32 with butterfly shuffles (mean, then the mean of squared deviations), the result
        rounded to fp16, zero past C."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        s = p.norm
        f32 = cutlass.Float32
        C = p.in_width
        ncol = (p.x_cols + 31) // 32
        warp_id = tid // 32
        lane = tid % 32
        for rr in cutlass.range_constexpr((self.tm + p.warps - 1) // p.warps):
            r = warp_id + rr * p.warps
            if r < self.tm:
                mean, rstd = row_norm_stats(sX, r, lane, C, s.kind == "layernorm", s.eps)
                for j in cutlass.range(ncol):
                    c = j * 32 + lane
                    if c < p.x_cols:
                        v = f32(0.0)
                        if c < C:
                            v = (sX[r, c].to(f32) - mean) * rstd
                            if cutlass.const_expr(s.gamma >= 0):
                                v = v * mWf[s.gamma + c]
                            if cutlass.const_expr(s.beta >= 0):
                                v = v + mWf[s.beta + c]
                        sX[r, c] = v.to(cutlass.Float16)
        self.mma_barrier()

    def stats(self, base):
        """The norm's statistics of the row tile, fp32 [tile_rows, 2]: mean, rstd."""
        return cute.make_tensor(
            cute.recast_ptr(base + self.p.stats_offset, dtype=cutlass.Float32),
            cute.make_layout((self.tm, 2), stride=(2, 1)),
        )

    @cute.jit
    def norm_stats(self, ctx, row0, nrows):
        """x_stream: the norm's (mean, rstd) of the row tile's rows from X in global memory,
        one warp per row, by row_norm_stats as norm_x computes them (8 loads of a lane in
        flight), into the stats region; 0 for rows past the last (their X is zero, their
        products never stored). The ring's next barrier makes them visible."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, s = self.p, self.p.norm
        f32 = cutlass.Float32
        st = self.stats(base)
        warp_id = tid // 32
        lane = tid % 32
        for rr in cutlass.range_constexpr((self.tm + p.warps - 1) // p.warps):
            r = warp_id + rr * p.warps
            if r < self.tm:
                mean = f32(0.0)
                rstd = f32(0.0)
                if r < nrows:
                    mean, rstd = row_norm_stats(
                        mX, row0 + r, lane, p.in_width, s.kind == "layernorm", s.eps, 8
                    )
                if lane == 0:
                    st[r, 0] = mean
                    st[r, 1] = rstd

    @cute.jit
    def mma_x(self, ctx, tiled_mma, thr_mma, thr_a, thr_b, sA, sBs, accs, tAc, kj):
        """x_stream: accs[m] += sA (X's chunk kj, M x K) @ sBs[m]^T, A loaded once per
        k-block (ldmatrix) and, with a norm, normed in registers as norm_x norms X in
        shared memory: (x - mean) * rstd, * gamma, + beta in fp32, rounded to fp16, zero
        past C."""
        tCsA = thr_mma.partition_A(sA)
        tCrA = tiled_mma.make_fragment_A(tCsA)
        tCsA_v = thr_a.partition_S(sA)
        tCrA_v = thr_a.retile(tCrA)
        tCrB = [tiled_mma.make_fragment_B(thr_mma.partition_B(sB)) for sB in sBs]
        tCsB_v = [thr_b.partition_S(sB) for sB in sBs]
        tCrB_v = [thr_b.retile(b) for b in tCrB]
        for k in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.copy(thr_a, tCsA_v[None, None, k], tCrA_v[None, None, k])
            if cutlass.const_expr(self.p.norm is not None):
                self.norm_a(ctx, tCrA[None, None, k], tAc[None, None, k], kj)
            for m in cutlass.range_constexpr(len(sBs)):
                cute.copy(thr_b, tCsB_v[m][None, None, k], tCrB_v[m][None, None, k])
                cute.gemm(tiled_mma, accs[m], tCrA[None, None, k], tCrB[m][None, None, k], accs[m])

    @cute.jit
    def norm_a(self, ctx, a, coords, kj):
        """The norm applied to an A fragment of X's chunk kj (coords: each element's (row,
        column) in the chunk)."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, s = self.p, self.p.norm
        f32 = cutlass.Float32
        st = self.stats(base)
        for i in cutlass.range_constexpr(cute.size(a)):
            r = coords[i][0]
            c = kj * p.k_chunk1 + coords[i][1]
            v = f32(0.0)
            if c < p.in_width:
                v = (a[i].to(f32) - st[r, 0]) * st[r, 1]
                if cutlass.const_expr(s.gamma >= 0):
                    v = v * mWf[s.gamma + c]
                if cutlass.const_expr(s.beta >= 0):
                    v = v + mWf[s.beta + c]
            a[i] = v.to(cutlass.Float16)

    @cute.jit
    def gemm1(self, ctx, nk1: cutlass.Constexpr, g0, xrows):
        """The hidden slice: X @ W1[:, slice] (or Wg, Wu) per n_chunk1 columns, k chunks
        streamed (with x_stream X's chunk too, normed in registers); bias and activation
        (or act(g) * u) in fp32, stored fp16, zero past H."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, tm, f = self.p, self.tm, self.p.first
        f32 = cutlass.Float32
        nc, kc = p.n_chunk1, p.k_chunk1
        tiled_mma, s2r_a, s2r_b, active = self.tiled(nc)
        thr_mma = tiled_mma.get_slice(tid % active)
        thr_a = s2r_a.get_slice(tid % active)
        thr_b = s2r_b.get_slice(tid % active)
        tCc = thr_mma.partition_C(cute.make_identity_tensor((tm, nc)))
        mats = len(ring1)
        # X by k chunks: indexing through the layout keeps the chunks' alignment known
        sXk = sX
        tAc = None
        if cutlass.const_expr(p.x_stream):
            tAc = thr_mma.partition_A(cute.make_identity_tensor((tm, kc)))
        else:
            sXk = cute.make_tensor(
                sX.iterator, cute.make_layout((tm, kc, nk1), stride=(p.x_stride, 1, kc))
            )
        for nj in cutlass.range(p.slice // nc, unroll=1):
            accs = [
                tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, nc)))
                for _ in range(mats)
            ]
            for m in cutlass.range_constexpr(mats):
                accs[m].fill(0.0)
            for kj in cutlass.range(nk1, unroll=1):
                t = nj * nk1 + kj
                self.take(ctx, g0, t, xrows)
                if tid < active:
                    if cutlass.const_expr(p.x_stream):
                        sA = cute.make_tensor(
                            sX[None, None, t % p.weight_buffers].iterator,
                            cute.make_layout((tm, kc), stride=(p.x_stride, 1)),
                        )
                        sBs = [self.b_tile(ring1[m], g0, t, kc, nc) for m in range(mats)]
                        self.mma_x(ctx, tiled_mma, thr_mma, thr_a, thr_b, sA, sBs, accs, tAc, kj)
                    else:
                        sA = cute.make_tensor(
                            sXk[None, None, kj].iterator,
                            cute.make_layout((tm, kc), stride=(p.x_stride, 1)),
                        )
                        for m in cutlass.range_constexpr(mats):
                            sB = self.b_tile(ring1[m], g0, t, kc, nc)
                            self.mma(tiled_mma, thr_mma, thr_a, thr_b, sA, sB, accs[m])
                self.give(ctx, g0, t)
            if tid < active:
                for i in cutlass.range_constexpr(cute.size(accs[0])):
                    r = tCc[i][0]
                    c = nj * nc + tCc[i][1]
                    col = h0 + c
                    v = f32(0.0)
                    if col < p.hidden:
                        if cutlass.const_expr(f.op == "linear"):
                            v = accs[0][i]
                            if cutlass.const_expr(f.b >= 0):
                                v = v + mWf[f.b + col]
                            for _, fn in f.epilogue:
                                v = _act(fn, v)
                        else:
                            g = accs[0][i]
                            u = accs[1][i]
                            if cutlass.const_expr(f.bg >= 0):
                                g = g + mWf[f.bg + col]
                            if cutlass.const_expr(f.bu >= 0):
                                u = u + mWf[f.bu + col]
                            v = _act(f.fn, g) * u
                    sH[r, c] = v.to(cutlass.Float16)
        # (cp.async: the next step's barrier makes the hidden slice visible to every warp;
        # TMA: the kernel's barrier after this)

    @cute.jit
    def gemm2(self, ctx, nk2: cutlass.Constexpr, rows, row0, nrows, g0):
        """The partials h_slice @ W2[slice, :] per output chunk, stored to the scratch."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, tm = self.p, self.tm
        nc, kc = p.n_chunk2, p.k_chunk2
        N = p.out_width
        tiled_mma, s2r_a, s2r_b, active = self.tiled(nc)
        thr_mma = tiled_mma.get_slice(tid % active)
        thr_a = s2r_a.get_slice(tid % active)
        thr_b = s2r_b.get_slice(tid % active)
        tCc = thr_mma.partition_C(cute.make_identity_tensor((tm, nc)))
        sHk = cute.make_tensor(
            sH.iterator, cute.make_layout((tm, kc, nk2), stride=(p.h_stride, 1, kc))
        )
        for jj in cutlass.range(p.n_chunks2, unroll=1):
            j = (jj + bid) % p.n_chunks2
            acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, nc)))
            acc.fill(0.0)
            for kj in cutlass.range(nk2, unroll=1):
                t = p.tiles1 + jj * nk2 + kj
                self.take(ctx, g0, t, (row0, nrows))
                if tid < active:
                    sA = cute.make_tensor(
                        sHk[None, None, kj].iterator,
                        cute.make_layout((tm, kc), stride=(p.h_stride, 1)),
                    )
                    sB = self.b_tile(ring2, g0, t, kc, nc)
                    self.mma(tiled_mma, thr_mma, thr_a, thr_b, sA, sB, acc)
                self.give(ctx, g0, t)
            if cutlass.const_expr(p.check_delay > 0):
                if bid == p.blocks - 1 and jj == 0:  # a checking build: the last block's
                    check_spin(p.check_delay)  # partials land late
            if tid < active:
                for i in cutlass.range_constexpr(cute.size(acc)):
                    r = tCc[i][0]
                    col = j * nc + tCc[i][1]
                    if r < nrows and col < N:
                        mS[(bid * rows + row0 + r) * N + col] = acc[i]

    @cute.jit
    def arrive(self, ctx, rt, rows):
        """Row tile rt's partials of this block stored: a barrier (every thread's stores
        issued), then one thread's release fence and add to the tile's arrival counter
        (module docstring, 4)."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        self.mma_barrier()
        if tid == 0:
            if cutlass.const_expr(self.p.fault != "stream_no_fence"):
                cute.arch.fence_acq_rel_gpu()  # release: the block's partial stores
            ptr = self.counter(mS, rows, rt, 0)
            cute.arch.red(ptr, cutlass.Int32(1), op="add", dtype=cutlass.Int32, sem="relaxed",
                          scope="gpu")  # fmt: skip

    @cute.jit
    def reduce(self, ctx, rt, rows, row0, nrows):
        """This block's reduce columns of row tile rt (module docstring, 5): wait for every
        block's arrival, add the partials in block order 0, 1, ..., blocks - 1, then b2, the
        epilogue and Y; count this block's read, the last reader resetting the counters."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        N, B, rc = p.out_width, p.blocks, p.reduce_cols
        fenced = p.fault != "stream_no_fence"
        want = B if p.fault != "stream_early_reduce" else B - 1
        if tid == 0:
            arrived = self.counter(mS, rows, rt, 0)
            t0 = cute.arch.globaltimer()
            sem = "acquire" if fenced else "relaxed"
            seen = cute.arch.load(arrived, cutlass.Int32, sem=sem, scope="gpu")
            while seen < cutlass.Int32(want):
                if cute.arch.globaltimer() - t0 > WATCHDOG_NS:
                    llvm.intr_trap()  # a block never arrived: trap rather than hang
                seen = cute.arch.load(arrived, cutlass.Int32, sem=sem, scope="gpu")
        self.stamp(ctx, rows, rt, 5)
        self.mma_barrier()
        if cutlass.const_expr(fenced):
            cute.arch.fence_acq_rel_gpu()  # acquire: every block's partials, for every thread
        c0 = bid * rc
        rr = p.reduce_rows
        if c0 < N:
            for ps in cutlass.range(self.tm // rr, unroll=1):
                r0 = ps * rr  # this pass: the tile's rows [r0, r0 + reduce_rows)
                if r0 < nrows:
                    self.reduce_pass(ctx, c0, rows, row0 + r0, nrows - r0)
        self.mma_barrier()  # every read of the partials done
        if tid == 0:
            old = cute.arch.atomic_add(
                self.counter(mS, rows, rt, 1), cutlass.Int32(1), sem="acq_rel", scope="gpu"
            )
            if old == cutlass.Int32(B - 1):  # every block has read: reset for the next launch
                if cutlass.const_expr(p.fault != "stream_no_reset"):
                    cute.arch.atomic_exch(
                        self.counter(mS, rows, rt, 0), cutlass.Int32(0), sem="relaxed",
                        scope="gpu",
                    )  # fmt: skip
                cute.arch.atomic_exch(
                    self.counter(mS, rows, rt, 1), cutlass.Int32(0), sem="relaxed", scope="gpu"
                )

    @cute.jit
    def reduce_pass(self, ctx, c0, rows, row0, nrows):
        """Rows [row0, row0 + min(nrows, reduce_rows)) of this block's reduce columns: the
        partials summed in block order, b2, the epilogue, Y."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        s2 = p.second
        N, rc, per = p.out_width, p.reduce_cols, p.reduce_per
        f32 = cutlass.Float32
        acc = cute.make_rmem_tensor(cute.make_layout(per), f32)
        if cutlass.const_expr(p.reduce_group > 0):
            self.sum_staged(ctx, acc, c0, rows, row0, nrows)
        else:
            self.sum_loaded(ctx, acc, c0, rows, row0, nrows)
        for e in cutlass.range_constexpr(per):
            idx = tid + e * p.mma_threads
            r = idx // rc
            col = c0 + idx - r * rc
            if idx < p.reduce_elems and r < nrows and col < N:
                row = row0 + r
                v = acc[e]
                if cutlass.const_expr(s2.b >= 0):
                    v = v + mWf[s2.b + col]
                for op, arg in s2.epilogue:
                    if cutlass.const_expr(op == "act"):
                        v = _act(arg, v)
                    else:
                        v = v + mX[row, col].to(f32)
                mY[row, col] = v

    @cute.jit
    def sum_staged(self, ctx, acc, c0, rows, row0, nrows):
        """The partials of columns [c0, c0 + reduce_cols) summed in block order through
        shared memory: groups of `reduce_group` blocks copied by cp.async into the two halves
        of the (idle) weight ring in turn, group g + 1 in flight while group g is summed;
        rows past nrows and columns past N are zero-filled. Into acc: this thread's
        `reduce_per` sums (element tid + e * mma_threads of the pass's [reduce_rows,
        reduce_cols])."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p, rr = self.p, self.p.reduce_rows
        N, rc, B, G = p.out_width, p.reduce_cols, p.blocks, p.reduce_group
        f32 = cutlass.Float32
        per, E = p.reduce_per, p.reduce_elems
        ngroups = (B + G - 1) // G
        # [rr, rc, slot, half] fp32 over the ring
        stg = cute.make_tensor(
            cute.recast_ptr(base + p.weight_smem_offset, dtype=f32),
            cute.make_layout((rr, rc, G, 2), stride=(rc, 1, E, G * E)),
        )
        vec = _vec_elems(N, 4)
        for e in cutlass.range_constexpr(per):
            acc[e] = f32(-0.0)  # -0 + x is x for every x: the first add is block 0 itself
        self.stage_group(mS, stg, 0, 0, c0, rows, row0, nrows, vec, tid)
        cute.arch.cp_async_commit_group()
        for g in cutlass.range(ngroups, unroll=1):
            if g + 1 < ngroups:
                self.stage_group(mS, stg, g + 1, (g + 1) % 2, c0, rows, row0, nrows, vec, tid)
            cute.arch.cp_async_commit_group()  # (empty after the last group)
            cute.arch.cp_async_wait_group(1)  # group g landed
            self.mma_barrier()
            half = g % 2
            for slot in cutlass.range_constexpr(G):
                if g * G + slot < B:
                    for e in cutlass.range_constexpr(per):
                        idx = tid + e * p.mma_threads
                        if cutlass.const_expr((e + 1) * p.mma_threads <= E) or idx < E:
                            r = idx // rc
                            acc[e] = acc[e] + stg[r, idx - r * rc, slot, half]
            self.mma_barrier()  # half g % 2 read before group g + 2 refills it

    @cute.jit
    def stage_group(self, mS, stg, g, half, c0, rows, row0, nrows, vec: cutlass.Constexpr, tid):
        """cp.async of blocks g * reduce_group, ...'s partials of columns [c0, c0 +
        reduce_cols) into `half`."""
        p = self.p
        N, rc, B, G = p.out_width, p.reduce_cols, p.blocks, p.reduce_group
        for slot in cutlass.range_constexpr(G):
            b = g * G + slot
            if b < B:
                off = b * rows * N  # a multiple of vec: N is (_vec_elems)
                if cutlass.const_expr(vec > 1):
                    off = cute.assume(off, divby=vec)
                gp = cute.make_tensor(mS.iterator + off, cute.make_layout((rows, N), stride=(N, 1)))
                self.stage(
                    gp, stg[None, None, slot, half], row0, nrows, c0, N - c0, p.reduce_rows, rc,
                    vec, tid,
                )  # fmt: skip

    @cute.jit
    def sum_loaded(self, ctx, acc, c0, rows, row0, nrows):
        """The partials of columns [c0, c0 + reduce_cols) summed in block order from
        registers (the ring cannot hold two groups): REDUCE_BATCH blocks' loads in flight
        before their adds (the order of the adds, and so the result, is that of one block at
        a time)."""
        mX, mWf, mY, mS, gW1, gW2, ring1, ring2, sX, sH, base, h0, bid, tid = ctx
        p = self.p
        N, rc, B = p.out_width, p.reduce_cols, p.blocks
        f32 = cutlass.Float32
        per = p.reduce_per
        at = cute.make_rmem_tensor(cute.make_layout(per), cutlass.Int32)
        for e in cutlass.range_constexpr(per):
            idx = tid + e * p.mma_threads
            r = idx // rc
            col = c0 + idx - r * rc
            acc[e] = f32(0.0)
            at[e] = cutlass.Int32(-1)
            if idx < p.reduce_elems and r < nrows and col < N:
                at[e] = (row0 + r) * N + col
        step = rows * N  # one block's partials
        for e in cutlass.range_constexpr(per):
            if at[e] >= 0:
                acc[e] = mS[at[e]]
        U = max(1, min(REDUCE_BATCH, REDUCE_REGS // per))
        vals = cute.make_rmem_tensor(cute.make_layout(U * per), f32)
        for bb in cutlass.range((B - 1 + U - 1) // U, unroll=1):
            b0 = 1 + bb * U
            for u in cutlass.range_constexpr(U):
                for e in cutlass.range_constexpr(per):
                    if at[e] >= 0 and b0 + u < B:
                        vals[u * per + e] = mS[(b0 + u) * step + at[e]]
            for u in cutlass.range_constexpr(U):
                for e in cutlass.range_constexpr(per):
                    if at[e] >= 0 and b0 + u < B:
                        acc[e] = acc[e] + vals[u * per + e]


def compile_args(plan: StreamPlan):
    """The fake arguments the kernel is compiled (and exported) for: x [rows, C] fp16, wh
    [wh_extent] fp16, wf [wf_extent] fp32, y [rows, N_out] fp32, scratch [extent] fp32
    (dynamic), rows, grid, stream."""
    fake = fake_tensor
    rows = cute.SymInt()
    return (
        fake(cutlass.Float16, (rows, plan.in_width)),
        fake(cutlass.Float16, (plan.wh_extent(),)),
        fake(cutlass.Float32, (plan.wf_extent(),)),
        fake(cutlass.Float32, (rows, plan.out_width)),
        fake(cutlass.Float32, (cute.SymInt(),)),
        1,
        1,
        cuda.CUstream(0),
    )


__all__ = ["FAULTS", "MODE", "SpecError", "StreamKernel", "StreamPlan", "compile_args"]
