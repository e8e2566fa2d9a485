"""CuTe DSL generator of `chain_wgmma` kernels: one linear or gated stage of a chain's
conventional schedule as a Hopper GEMM (wgmma + TMA) with its epilogue fused.

    dst = epilogue(src @ W + b)              (linear: act / add / mul of earlier values)
    dst = act(src @ Wg + bg) * (src @ Wu + bu)   (gated)

src is X or a value in the scratch (fp16), dst the scratch (at the value's dtype) or Y
(fp32); the kernel entry is a conventional schedule's segment whose only stage is the
matmul (src/compile/chain_conv.c puts every norm in a kernel of its own when it plans this
kernel). The C planner decides every number (the "wgmma" object: tile_m, tile_n, k_block,
stages; smem_bytes, threads); this module checks the entry and composes it.

Per work item (a tile_m x tile_n tile of dst; item = row tile x tiles_n + column tile,
grid-stride, the work the runtime counts as row tiles x `segment.slices`):
  - a producer warpgroup's first warp streams, for k blocks 0, 1, ... of the item, the
    tile_m x k_block tile of src and the k_block x tile_n tile(s) of W into a `stages`-deep
    ring (TMA, one mbarrier per stage; rows past the end, columns past K and N are TMA's
    zero fill), as far ahead as the ring allows, across items;
  - wg_m = tile_m / 64 consumer warpgroups each run wgmma m64 x tile_n x k16 over their 64
    rows (A and B from shared memory, fp32 accumulators), the k16 steps of a k block in
    ascending order, k blocks ascending from a zeroed accumulator: the order of the chain's
    error model (a dot product as 16-product MMA steps, src/chain/chain.h);
  - then the epilogue on the accumulator in fp32: + bias, the linear's epilogue ops in order
    (act; add / mul of a value read from X or the scratch at the same row and column), or
    act(g + bg) * (u + bu); stored at dst's dtype (fp16 by cvt.rn) for r < rows and
    c < N, and zeros in dst's padding columns [N, padded_width) of the scratch.
The consumers release a stage once its wgmma group has completed (wait_group 0 per k
block), so one k block's MMA overlaps the loads of the next `stages - 1`.

Planted fault (tests of the checks only): conv_no_store skips the stores into the scratch
(as the chain_mma segment kernels do), so a later kernel reads the check's fill.
"""

from __future__ import annotations

from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.utils import LayoutEnum

from rowfuse.kernels import rowfuse_hopper as rh
from rowfuse.kernels.chain_mma import (
    Stage,
    Value,
    _act,
    _int,
    _stage_from_spec,
    wf_extent,
    wh_extent,
)
from rowfuse.kernels.rowfuse_kernels import SpecError, fake_tensor

MODE = "chain_wgmma"
WG_THREADS = 128
WG_ROWS = 64
SMEM_ALIGN = 1024
# the producer warpgroup's registers and the consumers' (setmaxnreg), as the residual MLP's
# blocked ring splits them
PRODUCER_REGS = rh.PRODUCER_REGS
CONSUMER_REGS = rh.CONSUMER_REGS
FAULTS = ("", "conv_no_store")


@dataclass(frozen=True)
class GemmPlan:
    """Compile-time geometry of one chain_wgmma kernel, exactly as the C planner wrote it."""

    name: str
    in_width: int
    out_width: int
    values: tuple  # Value per chain value (global placement: glob, aux_col)
    stage: Stage
    aux_row: int
    tile_m: int
    tile_n: int
    k_block: int
    stages: int
    smem_bytes: int
    threads: int
    fault: str = ""

    @property
    def wg_m(self) -> int:
        return self.tile_m // WG_ROWS

    @property
    def mats(self) -> int:
        return self.stage.mats

    @property
    def segment(self) -> bool:  # the launcher's argument list (compile_args)
        return True

    def wh_extent(self) -> int:
        return wh_extent((self.stage,))

    def wf_extent(self) -> int:
        return wf_extent((self.stage,), lambda _: 0)

    def smem_count(self) -> int:
        """Bytes of dynamic shared memory the kernel allocates, counted as
        src/compile/chain_conv.c counts them: the full and empty mbarriers, the src ring,
        then the weight ring(s), each ring 1 KB aligned, and the allocator's alignment."""

        def add(off: int, nbytes: int, align: int) -> int:
            return (off + align - 1) // align * align + nbytes

        off = add(0, 8 * 2 * self.stages, 8)
        off = add(off, 2 * self.tile_m * self.k_block * self.stages, SMEM_ALIGN)
        for _ in range(self.mats):
            off = add(off, 2 * self.k_block * self.tile_n * self.stages, SMEM_ALIGN)
        return off + SMEM_ALIGN

    @classmethod
    def from_spec(cls, k: dict, smem_pad: int = 0) -> GemmPlan:
        """The plan of one kernel_spec.json entry of mode chain_wgmma; SpecError naming a
        missing or inconsistent field."""
        name = k.get("name", "?")
        if k.get("mode") != MODE:
            raise SpecError(f"{name}: mode {k.get('mode')!r} is not {MODE}")
        seg, g = k.get("segment"), k.get("wgmma")
        if not isinstance(seg, dict) or not isinstance(g, dict):
            raise SpecError(f"{name}: a chain_wgmma entry needs its 'segment' and 'wgmma'")
        values = []
        for i, v in enumerate(k.get("values", [])):
            where = f"{name}: values[{i}]"
            values.append(
                Value(
                    id=_int(v, "id", where),
                    width=_int(v, "width", where),
                    dtype=v.get("dtype", ""),
                    padded_width=_int(v, "padded_width", where),
                    smem_offset=-1,
                    row_stride=_int(v, "padded_width", where),
                    glob=v.get("global", ""),
                    aux_col=v.get("aux_col", -1),
                )
            )
        stages = k.get("stages", [])
        if len(stages) != 1:
            raise SpecError(
                f"{name}: a chain_wgmma kernel runs one matmul stage, not {len(stages)}"
            )
        stage = _stage_from_spec(stages[0], 0, name)
        plan = cls(
            name=name,
            in_width=_int(k, "in_width", name),
            out_width=_int(k, "out_width", name),
            values=tuple(values),
            stage=stage,
            aux_row=_int(seg, "aux_row", f"{name}: segment"),
            tile_m=_int(g, "tile_m", f"{name}: wgmma"),
            tile_n=_int(g, "tile_n", f"{name}: wgmma"),
            k_block=_int(g, "k_block", f"{name}: wgmma"),
            stages=_int(g, "stages", f"{name}: wgmma"),
            smem_bytes=_int(k, "smem_bytes", name),
            threads=_int(k, "threads", name),
            fault=k.get("fault", ""),
        )
        plan.check()
        return plan

    def check(self) -> None:
        n, s = self.name, self.stage

        def need(cond: bool, what: str) -> None:
            if not cond:
                raise SpecError(f"{n}: {what}")

        need(s.op in ("linear", "gated"), f"stage op {s.op!r} is not linear or gated")
        ids = [v.id for v in self.values]
        need(ids == list(range(len(ids))) and len(ids) >= 2, "values must be numbered 0..")
        need(0 <= s.src < len(ids) and 0 < s.dst < len(ids), "stage src / dst")
        src, dst = self.values[s.src], self.values[s.dst]
        need(
            src.dtype == "f16" and src.glob in ("x", "aux"), "src must be fp16 in X or the scratch"
        )
        need(dst.glob in ("y", "aux") and dst.dtype in ("f16", "f32"), "dst in Y or the scratch")
        need(src.width == s.k and dst.width == s.n, "stage k / n and the values' widths")
        need(s.k % 8 == 0 and s.n % 8 == 0, "TMA needs K and N multiples of 8")
        offs = (s.w,) if s.op == "linear" else (s.wg, s.wu)
        need(all(o >= 0 and o % 8 == 0 for o in offs), "weight offsets must be 16-byte aligned")
        for v in (src, dst):
            if v.glob == "aux":
                need(v.aux_col >= 0 and v.aux_col % 8 == 0, f"value {v.id}'s aux_col")
        need(self.aux_row % 8 == 0, "aux_row must keep scratch rows 16-byte aligned")
        for op, arg in s.epilogue:
            if op in ("add", "mul"):
                need(
                    0 <= arg < len(ids) and self.values[arg].glob in ("x", "aux"),
                    f"epilogue operand {arg} must be in X or the scratch",
                )
        need(self.tile_m in (64, 128), "tile_m must be 64 or 128")
        need(self.tile_n % 16 == 0 and 16 <= self.tile_n <= 256, "tile_n: 16..256, multiple of 16")
        need(self.k_block % 16 == 0 and self.k_block in (32, 64), "k_block must be 32 or 64")
        need(2 <= self.stages <= 16, "stages must be 2..16")
        tiles_n = -(-s.n // self.tile_n)
        need(dst.padded_width <= tiles_n * self.tile_n, "dst's padding beyond the last column tile")
        need(self.threads == WG_THREADS * (self.wg_m + 1), f"threads {self.threads}")
        need(self.fault in FAULTS, f"fault {self.fault!r}")
        counted = self.smem_count()
        need(
            self.smem_bytes == counted, f"smem_bytes {self.smem_bytes}, the layout takes {counted}"
        )


class ChainGemmKernel:
    """Generates the chain_wgmma kernel of a `GemmPlan` (module docstring)."""

    # the residual MLP's mbarrier helpers (a watchdog on every wait)
    wait = rh.WgmmaMlpKernel.wait
    producer_acquire = rh.WgmmaMlpKernel.producer_acquire

    def __init__(self, plan: GemmPlan):
        self.p = plan
        self.f16, self.f32 = cutlass.Float16, cutlass.Float32

    def tiled_mma(self):
        """One warpgroup's wgmma over 64 x tile_n: fp16 A (K-major) times fp16 B
        (N-major), both from shared memory, fp32 accumulators."""
        return sm90.make_trivial_tiled_mma(
            self.f16,
            self.f16,
            warpgroup.OperandMajorMode.K,
            warpgroup.OperandMajorMode.MN,
            self.f32,
            (1, 1, 1),
            tiler_mn=(WG_ROWS, self.p.tile_n),
        )

    def smem_layouts(self):
        p, f16 = self.p, self.f16
        la = sm90.make_smem_layout_a(
            LayoutEnum.ROW_MAJOR, (p.tile_m, p.tile_n, p.k_block), f16, p.stages
        )
        lb = sm90.make_smem_layout_b(
            LayoutEnum.COL_MAJOR, (WG_ROWS, p.tile_n, p.k_block), f16, p.stages
        )
        return la, lb

    def global_of(self, mX, mA, vid: int, rows):
        """Value vid in global memory, [rows, width] at its dtype: X, or its columns of the
        scratch."""
        p, v = self.p, self.p.values[vid]
        if v.glob == "x":
            return mX
        ptr, stride = mA.iterator + v.aux_col, p.aux_row
        if v.dtype == "f32":
            ptr, stride = cute.recast_ptr(ptr, dtype=self.f32), p.aux_row // 2
        return cute.make_tensor(ptr, cute.make_layout((rows, v.padded_width), stride=(stride, 1)))

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mA: cute.Tensor,
        rows: cutlass.Int32,
        grid: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        p, s = self.p, self.p.stage
        mma = self.tiled_mma()
        la, lb = self.smem_layouts()
        nrows = mX.shape[0]
        gsrc = self.global_of(mX, mA, s.src, nrows)
        # A: src [rows, K]; B: W [K, N] seen as (N, K), N contiguous
        gA = cute.make_tensor(
            gsrc.iterator, cute.make_layout((nrows, s.k), stride=(gsrc.stride[0], 1))
        )
        g2s = cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tA = cpasync.make_tiled_tma_atom(
            g2s, gA, cute.slice_(la, (None, None, 0)), (p.tile_m, p.k_block)
        )
        offs = (s.w,) if s.op == "linear" else (s.wg, s.wu)
        tmas = []
        for off in offs:
            gW = cute.make_tensor(mWh.iterator + off, cute.make_layout((s.n, s.k), stride=(1, s.n)))
            tmas.append(
                cpasync.make_tiled_tma_atom(
                    g2s, gW, cute.slice_(lb, (None, None, 0)), (p.tile_n, p.k_block)
                )
            )
        tma_b, tB = tmas[0]
        tma_u, tU = tmas[-1]
        self.kernel(mma, tma_a, tA, tma_b, tB, tma_u, tU, mX, mWf, mY, mA, rows, la, lb).launch(
            grid=(grid, 1, 1),
            block=(p.threads, 1, 1),
            smem=p.smem_bytes,
            stream=stream,
        )

    # ------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(
        self,
        mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        tA: cute.Tensor,
        tma_b: cute.CopyAtom,
        tB: cute.Tensor,
        tma_u: cute.CopyAtom,
        tU: cute.Tensor,
        mX: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mA: cute.Tensor,
        rows: cutlass.Int32,
        la: cute.ComposedLayout,
        lb: cute.ComposedLayout,
    ):
        p, s = self.p, self.p.stage
        gated = s.op == "gated"
        tidx, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // WG_THREADS)
        wtid = tidx - wg * WG_THREADS
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            if cutlass.const_expr(gated):
                cpasync.prefetch_descriptor(tma_u)

        smem = cutlass.utils.SmemAllocator()
        mbar = smem.allocate_array(cutlass.Int64, 2 * p.stages, byte_alignment=8)
        sA = smem.allocate_tensor(self.f16, la.outer, SMEM_ALIGN, la.inner)
        sB = smem.allocate_tensor(self.f16, lb.outer, SMEM_ALIGN, lb.inner)
        sU = sB
        if cutlass.const_expr(gated):
            sU = smem.allocate_tensor(self.f16, lb.outer, SMEM_ALIGN, lb.inner)
        stage_bytes = 2 * (p.tile_m + p.mats * p.tile_n) * p.k_block
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=mbar,
            num_stages=p.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4 * p.wg_m),
            tx_count=stage_bytes,
            defer_sync=True,
        )
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()  # barriers initialised

        one = cute.make_layout(1)
        gA = cute.local_tile(tA, (p.tile_m, p.k_block), (None, None))  # (tm, kb, m, k)
        tAs, tAg = cpasync.tma_partition(
            tma_a, 0, one, cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
        )
        gB = cute.local_tile(tB, (p.tile_n, p.k_block), (None, None))  # (tn, kb, n, k)
        tBs, tBg = cpasync.tma_partition(
            tma_b, 0, one, cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
        )
        tUs, tUg = tBs, tBg
        if cutlass.const_expr(gated):
            gU = cute.local_tile(tU, (p.tile_n, p.k_block), (None, None))
            tUs, tUg = cpasync.tma_partition(
                tma_u, 0, one, cute.group_modes(sU, 0, 2), cute.group_modes(gU, 0, 2)
            )

        tiles_m = (rows + p.tile_m - 1) // p.tile_m
        tiles_n = (s.n + p.tile_n - 1) // p.tile_n
        nk = (s.k + p.k_block - 1) // p.k_block
        items = tiles_m * tiles_n

        if wg == p.wg_m:
            # ---------------- the producer warpgroup: its first warp streams every k block
            # of this block's items through the ring
            cute.arch.warpgroup_reg_dealloc(PRODUCER_REGS)
            if warp == 4 * p.wg_m:
                st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, p.stages)
                for item in cutlass.range(bid, items, nblk, unroll=1):
                    mi = item // tiles_n
                    ni = item - mi * tiles_n
                    for kb in cutlass.range(nk, unroll=1):
                        self.producer_acquire(pipe, st)
                        bar = pipe.producer_get_barrier(st)
                        cute.copy(
                            tma_a, tAg[(None, mi, kb)], tAs[(None, st.index)], tma_bar_ptr=bar
                        )
                        cute.copy(
                            tma_b, tBg[(None, ni, kb)], tBs[(None, st.index)], tma_bar_ptr=bar
                        )
                        if cutlass.const_expr(gated):
                            cute.copy(
                                tma_u, tUg[(None, ni, kb)], tUs[(None, st.index)], tma_bar_ptr=bar
                            )
                        st.advance()
        else:
            # ---------------- the consumer warpgroups: 64 rows of the tile each
            cute.arch.warpgroup_reg_alloc(CONSUMER_REGS)
            thr = mma.get_slice(wtid)
            sAw = cute.local_tile(sA, (WG_ROWS, p.k_block), (wg, 0, None))  # (64, kb, stage)
            tCrA = mma.make_fragment_A(thr.partition_A(sAw))
            tCrB = mma.make_fragment_B(thr.partition_B(sB))
            tCrU = tCrB
            if cutlass.const_expr(gated):
                tCrU = mma.make_fragment_B(thr.partition_B(sU))
            acc_shape = thr.partition_shape_C((WG_ROWS, p.tile_n))
            tCc = thr.partition_C(cute.make_identity_tensor((WG_ROWS, p.tile_n)))
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, p.stages)
            rl = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, p.stages)
            ksteps = cute.size(tCrA, mode=[2])
            for item in cutlass.range(bid, items, nblk, unroll=1):
                mi = item // tiles_n
                ni = item - mi * tiles_n
                acc = thr.make_fragment_C(acc_shape)
                accu = acc
                if cutlass.const_expr(gated):
                    accu = thr.make_fragment_C(acc_shape)
                for kb in cutlass.range(nk, unroll=1):
                    self.wait(pipe.sync_object_full.get_barrier(st.index), st.phase)
                    warpgroup.fence()
                    for k in cutlass.range_constexpr(ksteps):
                        # the item's first k16 step starts the accumulator(s) from zero
                        mma.set(warpgroup.Field.ACCUMULATE, kb != 0 if k == 0 else True)
                        a = tCrA[None, None, k, st.index]
                        cute.gemm(mma, acc, a, tCrB[None, None, k, st.index], acc)
                        if cutlass.const_expr(gated):
                            cute.gemm(mma, accu, a, tCrU[None, None, k, st.index], accu)
                    warpgroup.commit_group()
                    st.advance()
                    # one k block's group stays in flight: the one before it has completed,
                    # so its stage goes back to the producer
                    warpgroup.wait_group(1)
                    if kb > 0:
                        pipe.consumer_release(rl)
                        rl.advance()
                warpgroup.wait_group(0)
                pipe.consumer_release(rl)
                rl.advance()
                row0 = mi * p.tile_m + wg * WG_ROWS
                col0 = ni * p.tile_n
                self.epilogue(mX, mWf, mY, mA, acc, accu, tCc, row0, col0, rows)

    @cute.jit
    def epilogue(self, mX, mWf, mY, mA, acc, accu, tCc, row0, col0, rows):
        """dst = the stage's epilogue of the accumulator(s), a pair of adjacent columns at a
        time (accumulator elements 2k and 2k + 1 are columns c and c + 1, c even; N is a
        multiple of 8, so a pair is inside N or past it whole): pairs inside [rows, N] are
        stored at dst's dtype, the scratch's padding pairs [N, padded_width) of these rows
        as zeros."""
        p, s, f32 = self.p, self.p.stage, self.f32
        dst = p.values[s.dst]
        gdst = mY
        if cutlass.const_expr(dst.glob == "aux"):
            gdst = self.global_of(mX, mA, s.dst, mX.shape[0])
        pair = cute.make_rmem_tensor(cute.make_layout(2), f32)
        for k in cutlass.range_constexpr(cute.size(acc) // 2):
            r = row0 + tCc[2 * k][0]
            c = col0 + tCc[2 * k][1]
            pair.fill(0.0)
            if c < s.n:
                for e in cutlass.range_constexpr(2):
                    pair[e] = self.value(
                        mX, mWf, mA, acc[2 * k + e], accu[2 * k + e], r, c + e, rows
                    )
            if cutlass.const_expr(dst.glob == "y"):
                if r < rows and c < s.n:
                    self.store_pair(gdst, pair, r, c, "f32")
            elif cutlass.const_expr(p.fault != "conv_no_store"):
                if r < rows and c < dst.padded_width:
                    self.store_pair(gdst, pair, r, c, dst.dtype)

    @cute.jit
    def value(self, mX, mWf, mA, g, u, r, c, rows):
        """The stage's output at (r, c) from its accumulator value(s), in fp32."""
        s = self.p.stage
        v = g
        if cutlass.const_expr(s.op == "linear"):
            if cutlass.const_expr(s.b >= 0):
                v = v + mWf[s.b + c]
            for op, arg in s.epilogue:
                if cutlass.const_expr(op == "act"):
                    v = _act(arg, v)
                elif cutlass.const_expr(op == "add"):
                    v = v + self.read(mX, mA, arg, r, c, rows)
                else:
                    v = v * self.read(mX, mA, arg, r, c, rows)
        else:
            if cutlass.const_expr(s.bg >= 0):
                v = v + mWf[s.bg + c]
            uu = u
            if cutlass.const_expr(s.bu >= 0):
                uu = uu + mWf[s.bu + c]
            v = _act(s.fn, v) * uu
        return v

    @cute.jit
    def store_pair(self, g, pair, r, c, dtype: cutlass.Constexpr):
        """pair -> g[r, c : c + 2] as one 8-byte (fp32) or 4-byte (fp16, cvt.rn) store."""
        if cutlass.const_expr(dtype == "f32"):
            st = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.f32, num_bits_per_copy=64)
            gv = cute.zipped_divide(g, (1, 2))
            cute.copy(
                st, pair, cute.make_tensor(gv[(None, (r, c // 2))].iterator, cute.make_layout(2))
            )
        else:
            h = cute.make_rmem_tensor(cute.make_layout(2), self.f16)
            for e in cutlass.range_constexpr(2):
                h[e] = pair[e].to(self.f16)
            st = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.f16, num_bits_per_copy=32)
            gv = cute.zipped_divide(g, (1, 2))
            cute.copy(
                st, h, cute.make_tensor(gv[(None, (r, c // 2))].iterator, cute.make_layout(2))
            )

    @cute.jit
    def read(self, mX, mA, vid: cutlass.Constexpr, r, c, rows):
        """Value vid at (r, c) as fp32 from X or the scratch (0 past the rows)."""
        g = self.global_of(mX, mA, vid, mX.shape[0])
        v = self.f32(0.0)
        if r < rows:
            if cutlass.const_expr(self.p.values[vid].dtype == "f16"):
                v = g[r, c].to(self.f32)
            else:
                v = g[r, c]
        return v


def compile_args(plan: GemmPlan):
    """The fake arguments of a conventional schedule's kernel (chain_mma.compile_args):
    x [rows, C] fp16, wh, wf, y [rows, N_out] fp32, the scratch [rows, aux_row] fp16, rows,
    grid, stream."""
    fake = fake_tensor
    rows = cute.SymInt()
    return (
        fake(cutlass.Float16, (rows, plan.in_width)),
        fake(cutlass.Float16, (plan.wh_extent(),)),
        fake(cutlass.Float32, (plan.wf_extent(),)),
        fake(cutlass.Float32, (rows, plan.out_width)),
        fake(cutlass.Float16, (rows, max(plan.aux_row, 8))),
        1,
        1,
        cuda.CUstream(0),
    )


__all__ = ["MODE", "ChainGemmKernel", "GemmPlan", "SpecError", "compile_args"]
