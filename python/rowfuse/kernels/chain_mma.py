"""CuTe DSL generator of `chain_mma` kernels: one persistent kernel per row-owned chain.

A chain maps X [M, C] to Y [M, N_out] through stages (linear, gated, act, add, norm), each
output row from its own input row (rowfuse/plan.h, kernel_spec.json "mode": "chain_mma").
The C planner decides every number (src/compile); this module reads the kernel entry,
checks it, and composes one stage template per stage. Nothing here chooses a tile, a
chunk, a precision or a shared-memory offset.

Per row tile (`tile_rows` rows; grid-stride over tiles):
  1. X is staged into value 0's shared-memory slot (fp16), zero outside [rows, C].
  2. Each stage in order, with a block barrier after it:
     - linear: dst = src @ W (+ b), then the fused epilogue (act / add / mul) in fp32 on
       the accumulator. W streams through the cp.async ring in tiles of
       [k_chunk x n_chunk] (zero-filled outside [K, N]); ldmatrix + mma.sync m16n8k16
       (fp16 in, fp32 accumulators), one n chunk at a time, k chunks innermost (unrolled
       up to UNROLL_K, a loop beyond).
     - gated: the same with two weight tiles per ring slot and two accumulators;
       dst = act(src @ Wg + bg) * (src @ Wu + bu).
     - act / add: elementwise over the slots, inputs read at their stored precision,
       computed in fp32.
     - norm: one warp per row; the row's features are summed with warp shuffles in fp32
       (LayerNorm: mean, then the mean of squared deviations; RMSNorm: the mean square),
       then scale (gamma) and shift (beta); softmax: the row's max, then the sum of
       exp(x - max), then exp(x - max) / sum.
  3. Every value is written at its planned dtype into its slot (fp16 rounding is to
     nearest even), padding columns [width, padded_width) as zeros, so a later linear
     never multiplies garbage. The last value (Y, fp32) is written straight to global
     memory when its slot offset is -1, else copied out of its slot after the last stage;
     only [rows, N_out] of Y is ever written, and global memory is only read inside X's
     [rows, C] and the weights' [K, N] / [N] extents.

Resident weights (weight_buffers 0, the whole chain's kernel with small weights): every
matmul's W lies in shared memory for the whole launch, [k_pad, n_pad] rows of n_pad +
smem_row_pad fp16 at weight_smem_offset + its w_smem (gated: Wg, then Wu), loaded once per
block before its first tile; a matmul stage then runs its chunks straight from there, with
one block barrier after the stage instead of two per k chunk.

Warp rows (the spec's "warp_rows": 1; chain_plan.h): a resident chain of linears, each with
at most an activation after it, every width at most 128 (64 with 32-row warp tiles). Each
warp owns tiles of WT = warp_tile_rows rows (warp tile w of the launch is rows [WT w, WT w +
WT); warp j of block b starts at b * warps + j and strides by all the launch's warps) and
runs every linear on them alone, WT / 16 MMA row tiles sharing each B fragment: the first
linear's A operand is its X tile (ldmatrix from its own rows of X's slot), every later
one's is the previous accumulator tile, activated in fp32 and rounded to fp16 in registers
(the m16n8k16 accumulator of columns [16 k, 16 k + 16) holds, thread for thread, the A
fragment of k block k: warp_chain maps one onto the other by their coordinates). Y is
stored from the last accumulators. X's slot holds x_buffers (2) tiles of tile_rows = WT x
warps rows, each warp its WT rows of each: the warp stages its next tile's X (cp.async)
before it computes the current one. After the weights' load one block barrier; warp
barriers only after that. The arithmetic is the resident kernel's, in the same order.

The weight ring: buffer b (b < weight_buffers) starts at weight_smem_offset + b * RB bytes,
where RB is the largest over the linear and gated stages of mats * k_chunk *
(n_chunk + smem_row_pad) * 2 (mats = 1 for linear, 2 for gated: Wg's tile then Wu's); a
tile is stored K-major rows of n_chunk + smem_row_pad fp16 (the pad against ldmatrix bank
conflicts). The planner counts the same bytes (ring_bytes() below states the rule). With
one or two buffers a stage's first tile is issued as the stage starts and each tile costs
two block barriers (the next tile is issued into the other buffer while this one is
multiplied). With more, the ring runs weight_buffers - 1 tiles ahead within a stage: its
first weight_buffers - 1 tiles are issued as the stage starts, one cp.async group each;
tile t waits until only the newer weight_buffers - 2 groups are in flight, passes one
block barrier (every warp has read tile t - 1), issues tile t + weight_buffers - 1 into the
buffer tile t - 1 used, and is multiplied; a barrier closes the stage (its epilogue's
stores visible, every buffer read before the next stage refills them). With ring_ahead
(the whole chain's kernel, no streamed input) the tiles are one sequence per row tile,
every matmul stage's in order (ChainPlan.ring_sequence): the first weight_buffers - 1 are
issued beside X as the row tile starts (X's wait leaves them in flight), and each tile
issues the sequence's tile weight_buffers - 1 ahead, a later stage's where this one's are
done, so no stage starts with an empty ring. Depth alone does not lift a block's weight
rate (each tile's wait and block barrier bind, not the bytes in flight); running ahead
removes each stage's refill (notes/kernels.md, 2026-12-08).

Warp layout: warps_m = tile_rows / 16 warps along the rows when `warps` allows (else the
largest divisor of tile_rows / 16 not above `warps`), warps_n = warps / warps_m along the
columns. A stage whose n_chunk / 16 is not a multiple of warps_n runs its MMA on the
largest warps_n' <= warps_n that divides n_chunk / 16 (the other warps wait at the
barrier): the geometry stays the planner's, the generator only maps it onto warps.

Activations are fp32 with the DSL's math functions without fast-math (cutlass.cute.math erf,
tanh, exp, sqrt): they lower to the same range-reduced sequences as CUDA's erff, tanhf and
expf (which use ex2.approx / rcp.approx inside; CUDA documents them within 2 ulp), never a
bare approximate instruction on the argument; division and sqrt are IEEE (div.rn, sqrt.rn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from rowfuse.kernels.rowfuse_kernels import (
    SpecError,
    TileOps,
    _vec_elems,
    fake_tensor,
    mma_sync_tiled,
)

MODE = "chain_mma"
ACTS = (
    "relu",
    "gelu_erf",
    "gelu_tanh",
    "silu",
    "sigmoid",
    "tanh",
    "identity",
    "softplus",
    "exp",
    "sin",
    "leaky_relu",
    "elu",
    "mish",
)
PARAMETRIC = ("leaky_relu", "elu")  # activations with a parameter, "alpha" in the spec


def _act_of(e: dict, where: str) -> str:
    """The activation of a spec entry ("fn", and for a PARAMETRIC one its "alpha") as the
    one string the generator carries: "leaky_relu:ALPHA", "elu:ALPHA"."""
    fn = e.get("fn")
    if fn not in ACTS:
        raise SpecError(f"{where}: unknown act fn {fn!r}")
    if fn not in PARAMETRIC:
        return fn
    alpha = e.get("alpha")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not math.isfinite(alpha):
        raise SpecError(f"{where}: {fn} needs a finite alpha, got {alpha!r}")
    return f"{fn}:{float(alpha)!r}"


# The norm kinds (src/chain/chain.h's RF_CHAIN_NORM_LIST) and the parameters each has in
# the spec; norm_stage computes them
NORMS = {"layernorm": ("eps", "gamma", "beta"), "rmsnorm": ("eps", "gamma"), "softmax": ()}
EPILOGUE_OPS = ("act", "add", "mul")
# k chunks of a matmul stage unrolled; more are a loop (compile time and code size)
UNROLL_K = 4
# The deepest weight ring the generator composes (the planner's RF_CHAIN_MAX_BUFFERS)
MAX_BUFFERS = 16
# the warp-rows layout's widest value, and with 32-row warp tiles (src/compile/chain_plan.h's
# RF_CHAIN_WARP_ROWS_MAX and RF_CHAIN_WARP_ROWS_PAIR_MAX)
WARP_ROWS_MAX = 128
WARP_ROWS_PAIR_MAX = 64


def wh_extent(stages) -> int:
    """fp16 elements of `wh` that `stages` read (the largest offset + K * N; at least 8)."""
    ends = [off + s.k * s.n for s in stages for off in (s.w, s.wg, s.wu) if off >= 0]
    return max(ends + [8])


def wf_extent(stages, norm_width) -> int:
    """fp32 elements of `wf` that `stages` read (the largest offset + its length; at least
    4): biases of N, a norm's gain and shift of norm_width(stage)."""
    ends = [off + s.n for s in stages for off in (s.b, s.bg, s.bu) if off >= 0]
    ends += [
        off + norm_width(s)
        for s in stages
        if s.op == "norm"
        for off in (s.gamma, s.beta)
        if off >= 0
    ]
    return max(ends + [4])


@dataclass(frozen=True)
class Value:
    """One value of the chain as the planner laid it out in shared memory."""

    id: int
    width: int
    dtype: str  # "f16" | "f32"
    padded_width: int
    smem_offset: int  # bytes; -1: not in shared memory (Y written straight to global)
    row_stride: int  # elements
    glob: str = ""  # a segment kernel's: "x", "y", "aux" or "none" (module docstring)
    aux_col: int = -1  # "aux": its first column of a scratch row, fp16 elements

    @property
    def elem_bytes(self) -> int:
        return 2 if self.dtype == "f16" else 4


@dataclass(frozen=True)
class Stage:
    """One stage of the chain (the kernel_spec.json stage entry, typed)."""

    op: str
    dst: int
    src: int = -1  # linear, gated, act, norm
    a: int = -1  # add
    b_src: int = -1  # add (the spec's "b")
    fn: str = "identity"  # act, gated
    k: int = 0
    n: int = 0
    k_pad: int = 0
    n_pad: int = 0
    k_chunk: int = 0
    n_chunk: int = 0
    w: int = -1  # linear: element offset into wh
    b: int = -1  # linear: element offset into wf, -1 = no bias
    wg: int = -1
    wu: int = -1
    bg: int = -1
    bu: int = -1
    epilogue: tuple = ()  # ((op, fn_or_src), ...)
    a_stream: bool = False  # a segment kernel's matmul: src streams through the ring
    w_smem: int = -1  # resident weights (weight_buffers 0): bytes from weight_smem_offset
    kind: str = ""  # norm: a key of NORMS
    eps: float = 0.0
    gamma: int = -1
    beta: int = -1

    @property
    def mats(self) -> int:
        return 2 if self.op == "gated" else 1

    @property
    def row_reads(self) -> tuple:
        """Value ids this stage reads whole rows of (a matmul's or a norm's input)."""
        return (self.src,) if self.op in ("linear", "gated", "norm") else ()

    @property
    def reads(self) -> tuple:
        """Value ids this stage reads."""
        if self.op == "add":
            return (self.a, self.b_src)
        extra = tuple(int(v) for o, v in self.epilogue if o in ("add", "mul"))
        return (self.src, *extra)


def _int(d: dict, key: str, where: str) -> int:
    if key not in d:
        raise SpecError(f"{where}: field '{key}' missing")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{where}: field '{key}' is {v!r}; expected an integer")
    return v


def _stage_from_spec(s: dict, i: int, name: str) -> Stage:
    where = f"{name}: stages[{i}]"
    op = s.get("op")
    if op in ("linear", "gated"):
        geo = {
            key: _int(s, key, where)
            for key in ("src", "dst", "k", "n", "k_pad", "n_pad", "k_chunk", "n_chunk")
        }
        if op == "linear":
            epi = []
            for j, e in enumerate(s.get("epilogue", [])):
                eo = e.get("op")
                if eo == "act":
                    epi.append(("act", _act_of(e, f"{where}.epilogue[{j}]")))
                elif eo in ("add", "mul"):
                    epi.append((eo, _int(e, "src", f"{where}.epilogue[{j}]")))
                else:
                    raise SpecError(f"{where}.epilogue[{j}]: unknown epilogue op {eo!r}")
            return Stage(
                op=op,
                w=_int(s, "w", where),
                b=_int(s, "b", where),
                epilogue=tuple(epi),
                a_stream=bool(s.get("a_stream", 0)),
                w_smem=_int(s, "w_smem", where) if "w_smem" in s else -1,
                **geo,
            )
        return Stage(
            op=op,
            a_stream=bool(s.get("a_stream", 0)),
            w_smem=_int(s, "w_smem", where) if "w_smem" in s else -1,
            fn=_act_of(s, where),
            wg=_int(s, "wg", where),
            wu=_int(s, "wu", where),
            bg=_int(s, "bg", where),
            bu=_int(s, "bu", where),
            **geo,
        )
    if op == "act":
        fn = _act_of(s, where)
        return Stage(op=op, src=_int(s, "src", where), dst=_int(s, "dst", where), fn=fn)
    if op == "add":
        return Stage(
            op=op, a=_int(s, "a", where), b_src=_int(s, "b", where), dst=_int(s, "dst", where)
        )
    if op == "norm":
        kind = s.get("kind")
        if kind not in NORMS:
            raise SpecError(f"{where}: norm kind {kind!r}; expected one of {', '.join(NORMS)}")
        params = NORMS[kind]
        eps = s.get("eps") if "eps" in params else 0.0
        if "eps" in params and (
            not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0
        ):
            raise SpecError(f"{where}: norm eps {eps!r}; expected a positive number")
        for key in ("gamma", "beta"):
            if key not in params and key in s and _int(s, key, where) >= 0:
                raise SpecError(f"{where}: a {kind} has no {key}")
        return Stage(
            op=op,
            kind=kind,
            src=_int(s, "src", where),
            dst=_int(s, "dst", where),
            eps=float(eps),
            gamma=_int(s, "gamma", where) if "gamma" in params else -1,
            beta=_int(s, "beta", where) if "beta" in params and "beta" in s else -1,
        )
    raise SpecError(f"{where}: unknown stage op {op!r}")


@dataclass(frozen=True)
class ChainPlan:
    """Compile-time geometry of one chain kernel, exactly as the C planner wrote it."""

    name: str
    in_width: int
    out_width: int
    tile_rows: int
    warps: int
    smem_bytes: int
    values: tuple
    stages: tuple
    weight_smem_offset: int
    weight_buffers: int
    smem_pad: int
    fault: str = ""
    # a kernel of the conventional schedule (the spec's "segment"; module docstring)
    segment: bool = False
    first_stage: int = 0
    inputs: tuple = (0,)
    direct: tuple = ()
    streamed: tuple = ()
    aux_row: int = 0
    split_stage: int = -1
    slices: int = 1
    slice_chunks: int = 0
    warp_rows: bool = False
    x_buffers: int = 0
    warp_tile_rows: int = 0
    # the ring runs ahead across the matmul stages of a row tile (module docstring)
    ring_ahead: bool = False

    @property
    def threads(self) -> int:
        return 32 * self.warps

    def ring_sequence(self) -> tuple:
        """The ring's tiles of a row tile in order (ring_ahead): per matmul stage, (stage,
        its first tile's index in the row tile, its tile count n chunks x k chunks)."""
        out, g = [], 0
        for s in self.stages:
            if s.op in ("linear", "gated"):
                t = (s.n_pad // s.n_chunk) * (s.k_pad // s.k_chunk)
                out.append((s, g, t))
                g += t
        return tuple(out)

    def split_after(self, sid: int) -> bool:
        """Stage `sid` (a chain stage id) runs on its block's column slice only."""
        return self.split_stage >= 0 and sid >= self.split_stage

    @property
    def warps_m(self) -> int:
        m = self.tile_rows // 16
        return max(d for d in range(1, m + 1) if m % d == 0 and d <= self.warps)

    @property
    def warps_n(self) -> int:
        return self.warps // self.warps_m

    def ring_bytes(self) -> int:
        """Bytes of one ring buffer (module docstring); a streamed input's
        [tile_rows x k_chunk] tile follows W's."""
        return max(
            (
                s.mats * s.k_chunk * (s.n_chunk + self.smem_pad) * 2
                + (self.tile_rows * (s.k_chunk + self.smem_pad) * 2 if s.a_stream else 0)
                for s in self.stages
                if s.op in ("linear", "gated")
            ),
            default=0,
        )

    def wh_extent(self) -> int:
        return wh_extent(self.stages)

    def wf_extent(self) -> int:
        return wf_extent(self.stages, lambda s: self.values[s.src].width)

    @classmethod
    def from_spec(cls, k: dict, smem_pad: int) -> ChainPlan:
        """The plan of one kernel_spec.json "chain_mma" entry; SpecError naming the first
        missing or inconsistent field (the generator checks the spec, it does not repair
        it)."""
        name = k.get("name", "?")
        if k.get("mode") != MODE:
            raise SpecError(f"{name}: mode {k.get('mode')!r} is not {MODE}")
        values = []
        for i, v in enumerate(k.get("values") or []):
            where = f"{name}: values[{i}]"
            if v.get("dtype") not in ("f16", "f32"):
                raise SpecError(f"{where}: dtype {v.get('dtype')!r}; expected f16 or f32")
            values.append(
                Value(
                    id=_int(v, "id", where),
                    width=_int(v, "width", where),
                    dtype=v["dtype"],
                    padded_width=_int(v, "padded_width", where),
                    smem_offset=_int(v, "smem_offset", where),
                    row_stride=_int(v, "row_stride", where),
                    glob=v.get("global", "") if "segment" in k else "",
                    aux_col=_int(v, "aux_col", where) if v.get("global") == "aux" else -1,
                )
            )
        stages = [_stage_from_spec(s, i, name) for i, s in enumerate(k.get("stages") or [])]
        seg = {}
        if "segment" in k:
            sg = k["segment"]
            where = f"{name}: segment"
            if not isinstance(sg, dict):
                raise SpecError(f"{where}: expected an object")
            ins = sg.get("inputs")
            if not isinstance(ins, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in ins
            ):
                raise SpecError(f"{where}: inputs must be a list of value ids")
            seg = {
                "segment": True,
                "first_stage": _int(sg, "first_stage", where),
                "inputs": tuple(ins),
                "direct": tuple(sg.get("direct", [])),
                "streamed": tuple(sg.get("streamed", [])),
                "aux_row": _int(sg, "aux_row", where),
                "split_stage": _int(sg, "split_stage", where),
                "slices": _int(sg, "slices", where),
                "slice_chunks": _int(sg, "slice_chunks", where),
            }
        warp = {}
        if "warp_rows" in k:
            warp = {
                "warp_rows": bool(_int(k, "warp_rows", name)),
                "x_buffers": _int(k, "x_buffers", name),
                "warp_tile_rows": _int(k, "warp_tile_rows", name),
            }
        if "ring_ahead" in k:
            warp["ring_ahead"] = bool(_int(k, "ring_ahead", name))
        plan = cls(
            name=name,
            in_width=_int(k, "in_width", name),
            out_width=_int(k, "out_width", name),
            tile_rows=_int(k, "tile_rows", name),
            warps=_int(k, "warps", name),
            smem_bytes=_int(k, "smem_bytes", name),
            values=tuple(values),
            stages=tuple(stages),
            weight_smem_offset=_int(k, "weight_smem_offset", name),
            weight_buffers=_int(k, "weight_buffers", name),
            smem_pad=smem_pad,
            fault=k.get("fault", ""),
            **warp,
            **seg,
        )
        if _int(k, "threads", name) != plan.threads:
            raise SpecError(f"{name}: threads {k['threads']} is not 32 * warps ({plan.threads})")
        plan.check()
        return plan

    def check(self) -> None:
        """Every rule the generator relies on; SpecError naming the first broken one."""
        n, vals, sts = self.name, self.values, self.stages
        if not sts:
            raise SpecError(f"{n}: the chain has no stage")
        tiles = (16, 32, 64) if not self.warp_rows else (64, 128)  # (warp rows: 4 warp tiles)
        if self.tile_rows not in tiles or not 1 <= self.warps <= 32:
            raise SpecError(f"{n}: tile_rows {self.tile_rows} / warps {self.warps} unsupported")
        if not 0 <= self.weight_buffers <= MAX_BUFFERS or (
            self.weight_buffers == 0 and self.segment
        ):
            raise SpecError(
                f"{n}: weight_buffers {self.weight_buffers}; expected 1 to {MAX_BUFFERS}, or 0 "
                "(resident weights) in the whole chain's kernel"
            )
        if self.ring_ahead and (
            self.weight_buffers <= 2 or self.segment or any(s.a_stream for s in sts)
        ):
            raise SpecError(
                f"{n}: ring_ahead needs the whole chain's kernel, a ring of more than two "
                f"weight buffers (got {self.weight_buffers}) and no streamed input"
            )
        f0 = self.first_stage
        if (
            f0 < 0
            or (not self.segment and f0 != 0)
            or len(vals) < f0 + len(sts) + 1
            or (not self.segment and len(vals) != len(sts) + 1)
            or any(v.id != i for i, v in enumerate(vals))
        ):
            raise SpecError(
                f"{n}: values must be ids 0..N in order, one per stage of the chain + X "
                f"(this kernel runs its stages {f0}..{f0 + len(sts) - 1})"
            )
        last = len(vals) - 1
        x, y = vals[0], vals[last]
        # (a segment kernel may read X in place: _check_segment)
        x_slot = not self.segment or 0 in self.inputs
        if x.width != self.in_width or x.dtype != "f16" or (x.smem_offset < 0 and x_slot):
            raise SpecError(f"{n}: value 0 must be X: fp16, width in_width, in shared memory")
        if y.width != self.out_width or y.dtype != "f32":
            raise SpecError(f"{n}: the last value must be Y: fp32, width out_width")
        for v in vals:
            w = f"{n}: value {v.id}"
            if v.width < 1 or v.padded_width < v.width or v.padded_width % 16:
                raise SpecError(
                    f"{w}: padded_width {v.padded_width} must be a multiple of 16 >= "
                    f"width {v.width}"
                )
            if v.smem_offset == -1:
                if v.id != last and not self.segment and not self.warp_rows:
                    raise SpecError(f"{w}: only Y may live outside shared memory")
                continue
            rows = self.tile_rows * (self.x_buffers if self.warp_rows and v.id == 0 else 1)
            end = v.smem_offset + (rows - 1) * v.row_stride * v.elem_bytes
            end += v.padded_width * v.elem_bytes
            if v.smem_offset < 0 or v.smem_offset % 16 or end > self.smem_bytes:
                raise SpecError(
                    f"{w}: smem_offset {v.smem_offset} is not 16-byte aligned or "
                    f"the slot ends past smem_bytes {self.smem_bytes}"
                )
            if v.row_stride < v.padded_width or (v.row_stride * v.elem_bytes) % 16:
                raise SpecError(
                    f"{w}: row_stride {v.row_stride} must cover padded_width and "
                    "keep rows 16-byte aligned"
                )
        for i, s in enumerate(sts):
            w = f"{n}: stages[{i}] ({s.op})"
            if s.dst != f0 + i + 1:
                raise SpecError(f"{w}: dst {s.dst}; stage {f0 + i} produces value {f0 + i + 1}")
            for r in s.reads:
                if not 0 <= r <= f0 + i:
                    raise SpecError(f"{w}: reads value {r}, which is not produced before it")
                streamed = s.a_stream and r == s.src and r in self.streamed
                in_regs = self.warp_rows and s.op == "linear" and r == s.src
                if (
                    vals[r].smem_offset < 0
                    and not streamed
                    and not in_regs
                    and not (r in self.direct and r not in s.row_reads and r <= f0)
                ):
                    raise SpecError(f"{w}: reads value {r}, which has no shared-memory slot")
            dst = vals[s.dst]
            if s.op in ("linear", "gated"):
                self._check_mm(s, w)
            elif s.op == "add":
                if not vals[s.a].width == vals[s.b_src].width == dst.width:
                    raise SpecError(f"{w}: widths of a, b and dst differ")
            elif vals[s.src].width != dst.width:
                raise SpecError(f"{w}: src width {vals[s.src].width} != dst width {dst.width}")
            for op, v in s.epilogue:
                if op in ("add", "mul") and vals[v].width != dst.width:
                    raise SpecError(
                        f"{w}: epilogue {op} of value {v} (width {vals[v].width}) "
                        f"into width {dst.width}"
                    )
            for off in (s.w, s.wg, s.wu, s.b, s.bg, s.bu, s.gamma, s.beta):
                if off >= 0 and off % 8:
                    raise SpecError(f"{w}: weight offset {off} is not a multiple of 8 elements")
        if self.fault not in ("", "conv_no_store") or (self.fault and not self.segment):
            raise SpecError(
                f"{n}: planted fault {self.fault!r}; a chain_mma kernel takes conv_no_store, "
                "in a conventional schedule's kernel only"
            )
        if self.segment:
            self._check_segment()
        if self.warp_rows:
            self._check_warp_rows()
        if self.resident:
            self._check_resident()
            return
        ring = self.weight_smem_offset + self.weight_buffers * self.ring_bytes()
        if self.ring_bytes() and (self.weight_smem_offset % 16 or ring > self.smem_bytes):
            raise SpecError(
                f"{n}: the weight ring [{self.weight_smem_offset}, {ring}) is not "
                f"16-byte aligned or ends past smem_bytes {self.smem_bytes}"
            )

    @property
    def resident(self) -> bool:
        """Every weight in shared memory for the whole launch (weight_buffers 0)."""
        return self.weight_buffers == 0

    @staticmethod
    def resident_bytes(s: Stage, smem_pad: int) -> int:
        """Bytes of stage s's resident weights: mats x [k_pad x (n_pad + pad)] fp16."""
        return s.mats * s.k_pad * (s.n_pad + smem_pad) * 2

    def _check_resident(self) -> None:
        """Resident weights: each matmul's region 128-byte aligned, in stage order, inside
        shared memory, none overlapping another (chain_plan.h)."""
        n, end = self.name, 0
        for i, s in enumerate(self.stages):
            if s.op not in ("linear", "gated"):
                continue
            w = f"{n}: stages[{i}] ({s.op})"
            if s.a_stream or s.w_smem < end or s.w_smem % 128:
                raise SpecError(f"{w}: w_smem {s.w_smem} (resident weights, from {end}, aligned)")
            end = s.w_smem + self.resident_bytes(s, self.smem_pad)
        if self.weight_smem_offset % 128 or self.weight_smem_offset + end > self.smem_bytes:
            raise SpecError(
                f"{n}: resident weights [{self.weight_smem_offset}, "
                f"{self.weight_smem_offset + end}) past smem_bytes {self.smem_bytes}"
            )

    def _check_warp_rows(self) -> None:
        """The warp-rows layout (module docstring): a resident whole chain of linears, each
        the previous one's consumer with at most an activation after it, 16 or 32 rows a
        warp tile, every hidden value fp16 in registers, widths within WARP_ROWS_MAX (32-row
        tiles: WARP_ROWS_PAIR_MAX)."""
        n, vals, sts = self.name, self.values, self.stages
        if self.segment or not self.resident or self.x_buffers != 2:
            raise SpecError(
                f"{n}: warp_rows needs the whole chain's kernel with resident weights and "
                f"x_buffers 2 (got x_buffers {self.x_buffers})"
            )
        wt = self.warp_tile_rows
        if wt not in (16, 32) or self.tile_rows != wt * self.warps:
            raise SpecError(
                f"{n}: warp_rows: warp_tile_rows {wt} (16 or 32) and tile_rows "
                f"{self.tile_rows} (warp_tile_rows x warps)"
            )
        widest = WARP_ROWS_MAX if wt == 16 else WARP_ROWS_PAIR_MAX
        for i, s in enumerate(sts):
            w = f"{n}: stages[{i}] ({s.op})"
            if s.op != "linear" or s.src != i or any(o != "act" for o, _ in s.epilogue):
                raise SpecError(
                    f"{w}: warp_rows takes linears of the previous stage's output, each with "
                    "at most an activation after it"
                )
            if max(vals[i].padded_width, s.n_pad) > widest:
                raise SpecError(f"{w}: warp_rows: a width above {widest} ({wt}-row warp tiles)")
            if i + 1 < len(sts) and (
                vals[i + 1].dtype != "f16"
                or vals[i + 1].smem_offset != -1
                or s.n_pad != sts[i + 1].k_pad
            ):
                raise SpecError(
                    f"{w}: warp_rows: value {i + 1} must be fp16 in registers (no slot) with "
                    f"n_pad {s.n_pad} equal to the next linear's k_pad"
                )

    def _check_segment(self) -> None:
        """The rules of a conventional schedule's kernel (module docstring)."""
        n, vals, sts, f0 = self.name, self.values, self.stages, self.first_stage
        last = len(vals) - 1
        if self.aux_row < 0 or self.aux_row % 8:
            raise SpecError(f"{n}: aux_row {self.aux_row} must be a multiple of 8 fp16 elements")
        want = {0: "x", last: "y"}
        for v in vals:
            w = f"{n}: value {v.id}"
            if v.glob not in ("x", "y", "aux", "none") or (v.id in want and v.glob != want[v.id]):
                raise SpecError(f"{w}: global {v.glob!r} (X is x, Y is y, others aux or none)")
            if v.glob == "aux":
                end = v.aux_col + v.padded_width * v.elem_bytes // 2
                if v.aux_col < 0 or v.aux_col % 8 or end > self.aux_row:
                    raise SpecError(
                        f"{w}: aux_col {v.aux_col} must be a multiple of 8 with its padded "
                        f"width inside aux_row {self.aux_row}"
                    )
        reads = {r for s in sts for r in s.reads}
        before = {r for r in reads if r <= f0}
        kinds = (set(self.inputs), set(self.direct), set(self.streamed))
        if set().union(*kinds) != before or sum(map(len, kinds)) != len(before):
            raise SpecError(
                f"{n}: inputs {sorted(self.inputs)}, direct {sorted(self.direct)} and streamed "
                f"{sorted(self.streamed)} must split the values read here and produced before "
                f"stage {f0}: {sorted(before)}"
            )
        for v in self.streamed:
            users = [s for s in sts if v in s.reads]
            if (
                vals[v].glob not in ("x", "aux")
                or vals[v].smem_offset >= 0
                or len(users) != 1
                or not users[0].a_stream
                or users[0].src != v
                or v in [int(u) for o, u in users[0].epilogue if o in ("add", "mul")]
            ):
                raise SpecError(
                    f"{n}: streamed input {v} must be X or in the scratch, without a slot, and "
                    "read here only as the input of one streaming matmul"
                )
        for v in self.inputs:
            if vals[v].glob not in ("x", "aux") or vals[v].smem_offset < 0:
                raise SpecError(f"{n}: input {v} is neither X nor in the scratch, or has no slot")
        for v in self.direct:
            if vals[v].glob not in ("x", "aux") or vals[v].smem_offset >= 0:
                raise SpecError(
                    f"{n}: direct input {v} is neither X nor in the scratch, or has a slot"
                )
        for s in sts:
            if s.dst not in reads and vals[s.dst].glob not in ("y", "aux"):
                raise SpecError(f"{n}: value {s.dst} is produced here and neither read nor stored")
        if self.split_stage < 0:
            if self.slices != 1:
                raise SpecError(f"{n}: {self.slices} slices without a split stage")
            return
        i = self.split_stage - f0
        if not 0 <= i < len(sts) or sts[i].op not in ("linear", "gated"):
            raise SpecError(f"{n}: split_stage {self.split_stage} is not a matmul of this kernel")
        mm = sts[i]
        nn = mm.n_pad // mm.n_chunk
        if self.slices < 1 or self.slice_chunks < 1 or self.slices * self.slice_chunks < nn:
            raise SpecError(
                f"{n}: {self.slices} slices of {self.slice_chunks} chunks do not cover the "
                f"{nn} n chunks of stage {self.split_stage}"
            )
        for s in sts[i + 1 :]:
            if s.op not in ("act", "add") or vals[s.dst].width != mm.n:
                raise SpecError(
                    f"{n}: stage producing {s.dst} ({s.op}) after the split stage must be "
                    f"elementwise of width {mm.n}"
                )

    def _check_mm(self, s: Stage, w: str) -> None:
        src, dst = self.values[s.src], self.values[s.dst]
        if src.dtype != "f16":
            raise SpecError(f"{w}: src value {s.src} is {src.dtype}; a matmul reads fp16")
        if s.k != src.width or s.n != dst.width:
            raise SpecError(
                f"{w}: k {s.k} / n {s.n} disagree with the widths of values "
                f"{s.src} ({src.width}) and {s.dst} ({dst.width})"
            )
        if s.k_chunk < 16 or s.k_chunk % 16 or s.n_chunk < 16 or s.n_chunk % 16:
            raise SpecError(
                f"{w}: k_chunk {s.k_chunk} / n_chunk {s.n_chunk} must be positive multiples of 16"
            )
        if s.k_pad % s.k_chunk or not s.k <= s.k_pad <= src.padded_width:
            raise SpecError(
                f"{w}: k_pad {s.k_pad} must be whole k chunks, cover k and stay "
                f"inside value {s.src}'s padded width {src.padded_width}"
            )
        if (
            s.n_pad % s.n_chunk
            or s.n_pad < s.n
            or (dst.smem_offset >= 0 and s.n_pad < dst.padded_width)
        ):
            raise SpecError(
                f"{w}: n_pad {s.n_pad} must be whole n chunks and cover n (and the "
                f"padded width of value {s.dst})"
            )


def _act(fn: str, x):
    """F(x) in fp32 (cutlass.cute.math, full precision)."""
    f32 = cutlass.Float32
    if fn == "identity":
        return x
    if fn == "relu":
        return cute.arch.fmax(x, f32(0.0))
    if fn == "gelu_erf":
        return f32(0.5) * x * (f32(1.0) + cute.math.erf(x * f32(1.0 / math.sqrt(2.0))))
    if fn == "gelu_tanh":
        inner = f32(math.sqrt(2.0 / math.pi)) * (x + f32(0.044715) * x * x * x)
        return f32(0.5) * x * (f32(1.0) + cute.math.tanh(inner))
    if fn == "sigmoid":
        return f32(1.0) / (f32(1.0) + cute.math.exp(-x))
    if fn == "silu":
        return x / (f32(1.0) + cute.math.exp(-x))
    if fn == "tanh":
        return cute.math.tanh(x)
    if fn == "softplus":  # max(x, 0) + ln(1 + exp(-|x|)): no overflow
        neg_abs = cute.arch.fmin(x, -x)
        return cute.arch.fmax(x, f32(0.0)) + cute.math.log1p(cute.math.exp(neg_abs))
    if fn == "exp":
        return cute.math.exp(x)
    if fn == "sin":
        return cute.math.sin(x)
    if fn.startswith("leaky_relu:"):  # x < 0 ? alpha x : x
        alpha = f32(float(fn.split(":", 1)[1]))
        return cute.arch.fmax(x, f32(0.0)) + alpha * cute.arch.fmin(x, f32(0.0))
    if fn.startswith("elu:"):  # x < 0 ? alpha (exp(x) - 1) : x
        alpha = f32(float(fn.split(":", 1)[1]))
        return cute.arch.fmax(x, f32(0.0)) + alpha * cute.math.expm1(cute.arch.fmin(x, f32(0.0)))
    if fn == "mish":  # x tanh(softplus(x))
        sp = cute.arch.fmax(x, f32(0.0)) + cute.math.log1p(cute.math.exp(cute.arch.fmin(x, -x)))
        return x * cute.math.tanh(sp)
    raise SpecError(f"unknown activation {fn!r}")


@cute.jit
def row_norm_stats(
    src: cute.Tensor,
    r,
    lane,
    width: cutlass.Constexpr,
    centred: cutlass.Constexpr,
    eps,
    unroll: cutlass.Constexpr = -1,
):
    """(mean, rstd) of row r of `src` over its first `width` columns, computed by one warp
    (lanes over the columns, fp32 sums with butterfly shuffles): LayerNorm (centred) the
    mean, then the mean of the squared deviations; RMSNorm a mean of 0 and the mean square.
    Shared by the chain kernels' norm stage and the streaming kernel's norm of X (in shared
    memory, or in global memory with `unroll` loads of a lane in flight: the same sums in
    the same order; -1 is the DSL's default)."""
    f32 = cutlass.Float32
    nsum = (width + 31) // 32
    inv_n = f32(1.0 / width)
    acc = f32(0.0)
    mean = f32(0.0)
    if cutlass.const_expr(centred):
        for j in cutlass.range(nsum, unroll=unroll):
            c = j * 32 + lane
            if c < width:
                acc = acc + src[r, c].to(f32)
        mean = cute.arch.warp_reduction_sum(acc) * inv_n
        acc = f32(0.0)
    for j in cutlass.range(nsum, unroll=unroll):
        c = j * 32 + lane
        if c < width:
            d = src[r, c].to(f32) - mean
            acc = acc + d * d
    var = cute.arch.warp_reduction_sum(acc) * inv_n
    rstd = f32(1.0) / cute.math.sqrt(var + f32(eps))
    return mean, rstd


class ChainKernel(TileOps):
    """Generates the chain_mma kernel of a `ChainPlan` (see module docstring)."""

    def __init__(self, plan: ChainPlan):
        self.p = plan
        self.threads = plan.threads
        self.fault = plan.fault  # the tile stager's planted fault (tests of the gates only)
        self.tm = plan.tile_rows
        self.vx = _vec_elems(plan.in_width, 2)

    # ------------------------------------------------------------------ host side
    @cute.jit
    def __call__(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        rows: cutlass.Int32,
        grid: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        extra = {}
        if cutlass.const_expr(self.p.ring_ahead):
            # (a ring this deep holds few blocks per SM: ptxas may take the registers
            # rather than spill for more blocks)
            extra = {"min_blocks_per_mp": 1}
        self.kernel(mX, mWh, mWf, mY, rows).launch(
            grid=(grid, 1, 1),
            block=(self.threads, 1, 1),
            smem=self.p.smem_bytes,
            stream=stream,
            **extra,
        )

    # ------------------------------------------------------------------ device side
    @cute.kernel
    def kernel(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        rows: cutlass.Int32,
    ):
        p, tm = self.p, self.tm
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()
        smem = cutlass.utils.SmemAllocator()
        base = smem.allocate(p.smem_bytes, 128)
        slots = [self.slot(base, v) for v in p.values]
        ntiles = (rows + tm - 1) // tm
        if cutlass.const_expr(p.resident):
            # every weight once, for all of this block's tiles (visible after the first
            # tile's barrier)
            self.load_resident(mWh, base, tid)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
        if cutlass.const_expr(p.warp_rows):
            cute.arch.sync_threads()
            self.warp_tiles(mX, mWf, mY, base, rows, tid, bid, nblk)
        else:
            for tile in cutlass.range(bid, ntiles, nblk):
                row0 = tile * tm
                nrows = rows - row0
                self.stage(
                    mX,
                    slots[0],
                    row0,
                    nrows,
                    0,
                    p.in_width,
                    tm,
                    p.values[0].padded_width,
                    self.vx,
                    tid,
                )
                cute.arch.cp_async_commit_group()
                ctx = (mWh, mWf, mY, slots, base, row0, nrows, tid, None)
                if cutlass.const_expr(p.ring_ahead):
                    # the ring's first weight_buffers - 1 tiles in flight beside X's
                    nseq = sum(t for _, _, t in p.ring_sequence())
                    for g in cutlass.range_constexpr(p.weight_buffers - 1):
                        if cutlass.const_expr(g < nseq):
                            self.ring_issue(ctx, g, g, g + 1)
                        cute.arch.cp_async_commit_group()
                    cute.arch.cp_async_wait_group(p.weight_buffers - 1)
                else:
                    cute.arch.cp_async_wait_group(0)
                cute.arch.sync_threads()
                self.run_stages(ctx)
                if cutlass.const_expr(p.values[-1].smem_offset >= 0):
                    self.copy_out(ctx)

    @cute.jit
    def warp_tiles(self, mX, mWf, mY, base, rows, tid, bid, nblk):
        """The warp-rows layout (module docstring): this warp's tiles, each one's X staged
        while the one before it computes."""
        p = self.p
        x = p.values[0]
        wt = p.warp_tile_rows
        warp = tid // 32
        lane = tid % 32
        # X's slot as [wt rows, padded width, warps, x_buffers]: a slice at the runtime warp
        # and buffer keeps the 16-byte alignment ldmatrix needs
        xs = cute.make_tensor(
            cute.recast_ptr(base + x.smem_offset, dtype=cutlass.Float16),
            cute.make_layout(
                (wt, x.padded_width, p.warps, p.x_buffers),
                stride=(x.row_stride, 1, wt * x.row_stride, p.tile_rows * x.row_stride),
            ),
        )
        tiled_mma, s2r_a, s2r_b = mma_sync_tiled(1, 1)
        mm = (tiled_mma, tiled_mma.get_slice(lane), s2r_a.get_slice(lane), s2r_b.get_slice(lane))
        ntiles = (rows + wt - 1) // wt
        first = bid * p.warps + warp
        step = nblk * p.warps
        if first < ntiles:
            self.stage_warp_x(mX, xs[None, None, warp, 0], first, rows, lane)
        cute.arch.cp_async_commit_group()
        buf = cutlass.Int32(0)
        for t in cutlass.range(first, ntiles, step, unroll=1):
            nxt = t + step
            cute.arch.sync_warp()  # every lane is done with the other buffer's tile
            if nxt < ntiles:
                self.stage_warp_x(mX, xs[None, None, warp, 1 - buf], nxt, rows, lane)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(1)
            cute.arch.sync_warp()
            self.warp_chain(xs[None, None, warp, buf], mWf, mY, base, t * wt, rows - t * wt, mm)
            buf = 1 - buf

    @cute.jit
    def stage_warp_x(self, mX, dst, tile, rows, lane):
        """X's warp tile `tile` (rows [wt tile, wt tile + wt)) into dst by this warp's lanes
        (cp.async, zero outside the rows and C; the caller commits)."""
        p = self.p
        wt = p.warp_tile_rows
        x = p.values[0]
        self.stage(
            mX, dst, tile * wt, rows - tile * wt, 0, p.in_width, wt, x.padded_width, self.vx,
            lane, 32,
        )  # fmt: skip

    @cute.jit
    def warp_chain(self, sX, mWf, mY, base, row0, nrows, mm):
        """Every linear of the chain over one warp's tile (module docstring, warp rows): the
        hidden values stay in registers as the next linear's A fragments."""
        p = self.p
        tiled_mma, thr_mma, thr_a, thr_b = mm
        f32 = cutlass.Float32
        x = p.values[0]
        wt = p.warp_tile_rows
        mt = wt // 16
        n_st = len(p.stages)
        h = None
        for i in cutlass.range_constexpr(n_st):
            s = p.stages[i]
            rs = s.n_pad + p.smem_pad
            sB = cute.make_tensor(
                self.resident_tile(base, s, 0).iterator,
                cute.make_layout((s.n_pad, s.k_pad), stride=(1, rs)),
            )
            acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((wt, s.n_pad)))
            acc.fill(0.0)
            if cutlass.const_expr(i == 0):
                sA = cute.make_tensor(
                    sX.iterator, cute.make_layout((wt, s.k_pad), stride=(x.row_stride, 1))
                )
                self.mma(tiled_mma, thr_mma, thr_a, thr_b, sA, sB, acc)
            else:
                self.mma_ra(tiled_mma, thr_mma, thr_b, h, sB, acc)
            tCc = thr_mma.partition_C(cute.make_identity_tensor((wt, s.n_pad)))
            nb = s.n_pad // 8
            last = i + 1 == n_st
            if cutlass.const_expr(not last):
                h = tiled_mma.make_fragment_A(
                    tiled_mma.partition_shape_A((wt, p.stages[i + 1].k_pad))
                )
                # accumulator ((2, 2), mt, n / 8) -> A fragment ((2, 2, 2), mt, n / 16): value
                # (i0, i1) of row tile m and 8 columns j is value (i0, i1, j % 2) of row tile m
                # and k block j // 2 (the shapes checked here, the indices colexicographic)
                if cutlass.const_expr(
                    cute.size(acc) != 4 * mt * nb or cute.size(h) != cute.size(acc)
                ):
                    raise SpecError(f"{p.name}: stage {i}: unexpected MMA fragment shapes")
            for m in cutlass.range_constexpr(mt):
                for j in cutlass.range_constexpr(nb):
                    for e in cutlass.range_constexpr(4):
                        jc = e + 4 * (m + mt * j)
                        r = tCc[jc][0]
                        c = tCc[jc][1]
                        v = f32(0.0)
                        if c < s.n:
                            v = acc[jc]
                            if cutlass.const_expr(s.b >= 0):
                                v = v + mWf[s.b + c]
                            for _op, arg in s.epilogue:  # (acts only: _check_warp_rows)
                                v = _act(arg, v)
                        if cutlass.const_expr(not last):
                            h[e + 4 * (j % 2) + 8 * (m + mt * (j // 2))] = v.to(cutlass.Float16)
                        else:
                            if r < nrows and c < s.n:
                                mY[row0 + r, c] = v

    @cute.jit
    def run_stages(self, ctx):
        """Every stage of the plan in order over one row tile (ctx: kernel's state)."""
        for s in self.p.stages:
            if cutlass.const_expr(s.op in ("linear", "gated") and self.p.resident):
                self.resident_stage(ctx, s)
            elif cutlass.const_expr(s.op in ("linear", "gated")):
                self.matmul_stage(ctx, s)
            elif cutlass.const_expr(s.op == "norm"):
                self.norm_stage(ctx, s)
            else:
                self.elementwise_stage(ctx, s)

    def slot(self, base, v: Value):
        """Value v's tile [tile_rows, padded_width] in shared memory (None for Y outside)."""
        if v.smem_offset < 0:
            return None
        dt = cutlass.Float16 if v.dtype == "f16" else cutlass.Float32
        ptr = cute.recast_ptr(base + v.smem_offset, dtype=dt)
        return cute.make_tensor(
            ptr, cute.make_layout((self.tm, v.padded_width), stride=(v.row_stride, 1))
        )

    def weights(self, mWh, s: Stage) -> list:
        """Stage s's weight matrices in global memory, each W [K, N] row-major (gated: Wg,
        then Wu)."""
        offs = (s.w,) if s.op == "linear" else (s.wg, s.wu)
        return [
            cute.make_tensor(mWh.iterator + off, cute.make_layout((s.k, s.n), stride=(s.n, 1)))
            for off in offs
        ]

    def ring(self, base, s: Stage, mat: int):
        """Ring tiles of matrix `mat` of stage s: [k_chunk, n_chunk, weight_buffers]."""
        p = self.p
        rs = s.n_chunk + p.smem_pad
        ptr = cute.recast_ptr(
            base + p.weight_smem_offset + mat * s.k_chunk * rs * 2, dtype=cutlass.Float16
        )
        return cute.make_tensor(
            ptr,
            cute.make_layout(
                (s.k_chunk, s.n_chunk, p.weight_buffers), stride=(rs, 1, p.ring_bytes() // 2)
            ),
        )

    def mm_parts(self, s: Stage, tid):
        """The MMA of stage s and this thread's slices of it: the tiled mma.sync over
        warps_m x warps_n' warps (warps_n_of), its ldmatrix copies of A and B, the
        coordinates of the accumulator, and the threads that take part."""
        p = self.p
        wn = self.warps_n_of(s)
        active = 32 * p.warps_m * wn
        tiled_mma, s2r_a, s2r_b = mma_sync_tiled(p.warps_m, wn)
        thr_mma = tiled_mma.get_slice(tid % active)
        tCc = thr_mma.partition_C(cute.make_identity_tensor((self.tm, s.n_chunk)))
        return (
            tiled_mma,
            thr_mma,
            s2r_a.get_slice(tid % active),
            s2r_b.get_slice(tid % active),
            tCc,
            active,
        )

    def resident_tile(self, base, s: Stage, mat: int):
        """Matrix `mat` of stage s, resident: [k_pad, n_pad] rows of n_pad + pad fp16."""
        p = self.p
        rs = s.n_pad + p.smem_pad
        off = p.weight_smem_offset + s.w_smem + mat * s.k_pad * rs * 2
        ptr = cute.recast_ptr(base + off, dtype=cutlass.Float16)
        return cute.make_tensor(ptr, cute.make_layout((s.k_pad, s.n_pad), stride=(rs, 1)))

    @cute.jit
    def load_resident(self, mWh, base, tid):
        """cp.async of every matmul's weights into their resident tiles, zero outside
        [K, N] (the caller commits and waits)."""
        for s in self.p.stages:
            if cutlass.const_expr(s.op in ("linear", "gated")):
                for m, g in enumerate(self.weights(mWh, s)):
                    t = self.resident_tile(base, s, m)
                    self.stage(g, t, 0, s.k, 0, s.n, s.k_pad, s.n_pad, _vec_elems(s.n, 2), tid)

    @cute.jit
    def resident_stage(self, ctx, s: cutlass.Constexpr):
        """linear / gated with resident weights: every n chunk, k chunks innermost, the
        operands already in shared memory (no staging, no barrier per chunk); one barrier
        after the stage, so its output is visible to the next."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        tiled_mma, thr_mma, thr_a, thr_b, tCc, active = self.mm_parts(s, tid)
        p, tm = self.p, self.tm
        kc, nc = s.k_chunk, s.n_chunk
        nk, nn = s.k_pad // kc, s.n_pad // nc
        rs = s.n_pad + p.smem_pad
        src = slots[s.src]
        sAk = cute.make_tensor(
            src.iterator, cute.make_layout((tm, kc, nk), stride=(p.values[s.src].row_stride, 1, kc))
        )
        # each resident matrix as [n_chunk, k_chunk] tiles indexed (n chunk, k chunk): modes,
        # so a slice at runtime indices keeps the 16-byte alignment ldmatrix needs
        tiles = [
            cute.make_tensor(
                self.resident_tile(base, s, m).iterator,
                cute.make_layout((nc, kc, nn, nk), stride=(1, rs, nc, kc * rs)),
            )
            for m in range(s.mats)
        ]
        if tid < active:
            for nj in cutlass.range(nn, unroll=1):
                accs = [
                    tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, nc)))
                    for _ in range(s.mats)
                ]
                for m in cutlass.range_constexpr(s.mats):
                    accs[m].fill(0.0)
                if cutlass.const_expr(nk <= UNROLL_K):
                    for kj in cutlass.range_constexpr(nk):
                        for m in cutlass.range_constexpr(s.mats):
                            sB = tiles[m][None, None, nj, kj]
                            self.mma(
                                tiled_mma, thr_mma, thr_a, thr_b, sAk[None, None, kj], sB, accs[m]
                            )
                else:
                    for kj in cutlass.range(nk, unroll=1):
                        for m in cutlass.range_constexpr(s.mats):
                            sB = tiles[m][None, None, nj, kj]
                            self.mma(
                                tiled_mma, thr_mma, thr_a, thr_b, sAk[None, None, kj], sB, accs[m]
                            )
                self.mm_epilogue(ctx, s, accs, tCc, nj * nc)
        cute.arch.sync_threads()

    def ring_a(self, base, s: Stage):
        """A streamed input's tiles of stage s: [tile_rows, k_chunk, weight_buffers], after
        W's tiles in each ring buffer."""
        p = self.p
        off = p.weight_smem_offset + s.mats * s.k_chunk * (s.n_chunk + p.smem_pad) * 2
        return cute.make_tensor(
            cute.recast_ptr(base + off, dtype=cutlass.Float16),
            cute.make_layout(
                (self.tm, s.k_chunk, p.weight_buffers),
                stride=(s.k_chunk + p.smem_pad, 1, p.ring_bytes() // 2),
            ),
        )

    @cute.jit
    def stage_a(self, ctx, s: cutlass.Constexpr, buf, kk):
        """A streamed input's k chunk kk of this row tile into ring buffer buf (zero outside
        the rows and K), in the caller's cp.async group."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        kc = s.k_chunk
        g = ext[0][s.src]
        vec = self.vx if s.src == 0 else 8
        ra = self.ring_a(base, s)
        self.stage(
            g, ra[None, None, buf], row0, nrows, kk * kc, s.k - kk * kc, self.tm, kc, vec, tid
        )

    def f16(self, vid: int) -> bool:
        return self.p.values[vid].dtype == "f16"

    def warps_n_of(self, s: Stage) -> int:
        """Warps along the columns of stage s's MMA (module docstring)."""
        q = s.n_chunk // 16
        return max(d for d in range(1, self.p.warps_n + 1) if q % d == 0)

    # ------------------------------------------------------------------ value access
    @cute.jit
    def load(self, t: cute.Tensor, f16: cutlass.Constexpr, r, c):
        """Element (r, c) of a value's slot as fp32 (f16: the value is stored fp16)."""
        if cutlass.const_expr(f16):
            return t[r, c].to(cutlass.Float32)
        return t[r, c]

    @cute.jit
    def read(self, ctx, vid: cutlass.Constexpr, r, c):
        """Value vid at (r, c) as fp32, for an element-by-element use (c < its width): from
        its slot, or, for a segment kernel's direct input, from X or the scratch in global
        memory (0 for a row past the rows)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        if cutlass.const_expr(self.p.values[vid].smem_offset >= 0 or not self.p.segment):
            return self.load(slots[vid], self.f16(vid), r, c)
        g = ext[0][vid]
        v = cutlass.Float32(0.0)
        if r < nrows:
            v = self.load(g, self.f16(vid), row0 + r, c)
        return v

    @cute.jit
    def put(self, ctx, t, val: cutlass.Constexpr, r, c, v):
        """Stores fp32 v as value `val` at (r, c): into its slot t at its dtype when it has
        one and c < padded_width (v is 0 for padding columns); to Y in global memory when
        r < rows and c < N_out (the whole chain's kernel: Y has no slot; a conventional
        kernel: "global" y); and, in a conventional kernel, into the scratch when a later
        kernel reads it (r < rows, c < padded_width)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        if cutlass.const_expr(val.smem_offset >= 0):
            if c < val.padded_width:
                if cutlass.const_expr(val.dtype == "f16"):
                    t[r, c] = v.to(cutlass.Float16)
                else:
                    t[r, c] = v
        if cutlass.const_expr(val.smem_offset < 0 if not self.p.segment else val.glob == "y"):
            if r < nrows and c < val.width:
                mY[row0 + r, c] = v
        # (a planted conv_no_store skips these stores: tests of the checks only)
        if cutlass.const_expr(val.glob == "aux" and self.p.fault != "conv_no_store"):
            g = ext[0][val.id]
            if r < nrows and c < val.padded_width:
                if cutlass.const_expr(val.dtype == "f16"):
                    g[row0 + r, c] = v.to(cutlass.Float16)
                else:
                    g[row0 + r, c] = v

    # ------------------------------------------------------------------ stage templates
    @cute.jit
    def matmul_stage(self, ctx, s: cutlass.Constexpr):
        """linear / gated: n chunks outermost (runtime loop), k chunks unrolled; W tiles
        stream through the ring (double-buffered when weight_buffers == 2)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        p, tm = self.p, self.tm
        kc, nc = s.k_chunk, s.n_chunk
        nk, nn = s.k_pad // kc, s.n_pad // nc
        tiled_mma, thr_mma, thr_a, thr_b, tCc, active = self.mm_parts(s, tid)
        gws = self.weights(mWh, s)
        rings = [self.ring(base, s, m) for m in range(s.mats)]
        vw = _vec_elems(s.n, 2)
        src = slots[s.src]

        # the n chunks this block runs: all of them, or its column slice [nj0, nj1) of a
        # split kernel's matmul
        nj0, nj1, span = 0, nn, None
        if cutlass.const_expr(s.dst - 1 == p.split_stage):
            nj0 = ext[1] * p.slice_chunks
            nj1 = nj0 + p.slice_chunks
            if nj1 > nn:
                nj1 = nn
            span = (nj0, nj1)
        if cutlass.const_expr(p.weight_buffers <= 2):
            # the first W tile
            self.ring_tile(ctx, s, gws, rings, vw, nj0, 0, 0)
            cute.arch.cp_async_commit_group()
        elif cutlass.const_expr(not p.ring_ahead):
            # the ring's first weight_buffers - 1 tiles, one cp.async group each (empty past
            # the block's last tile)
            for t in cutlass.range_constexpr(p.weight_buffers - 1):
                if t < (nj1 - nj0) * nk:
                    self.ring_tile(
                        ctx, s, gws, rings, vw, nj0 + t // nk, t % nk, t % p.weight_buffers
                    )
                cute.arch.cp_async_commit_group()
        for nj in cutlass.range(nj0, nj1, unroll=1):
            accs = [
                tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((tm, nc)))
                for _ in range(s.mats)
            ]
            for m in cutlass.range_constexpr(s.mats):
                accs[m].fill(0.0)
            mm = (tiled_mma, thr_mma, thr_a, thr_b, tCc, gws, rings, vw, src, active)
            if cutlass.const_expr(nk <= UNROLL_K):
                for kj in cutlass.range_constexpr(nk):
                    self.k_step(ctx, s, mm, accs, nj, kj, span)
            else:
                for kj in cutlass.range(nk, unroll=1):
                    self.k_step(ctx, s, mm, accs, nj, kj, span)

    @cute.jit
    def k_step(self, ctx, s: cutlass.Constexpr, mm, accs, nj, kj, span=None):
        """One k chunk of n chunk nj: stream the next W tile in, wait for this one, MMA it
        into accs, and after the last k chunk run the epilogue. kj is a Python int (the k
        chunks unrolled) or a runtime value (a loop, beyond UNROLL_K chunks). span: the
        block's n chunks [first, end) of a split stage (None: all of them)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        tiled_mma, thr_mma, thr_a, thr_b, tCc, gws, rings, vw, src, active = mm
        p, tm = self.p, self.tm
        kc, nc = s.k_chunk, s.n_chunk
        nk, nn = s.k_pad // kc, s.n_pad // nc
        nj_rel, nj_first, nj_end = nj, 0, nn
        if cutlass.const_expr(span is not None):
            nj_rel, nj_first, nj_end = nj - span[0], span[0], span[1]
        nbuf = p.weight_buffers
        buf = 0
        if cutlass.const_expr(nbuf > 2):
            # the ring: tile t of the stage is cp.async group t; wait for it (the newer
            # nbuf - 2 stay in flight), one barrier (every warp has read tile t - 1), then
            # tile t + nbuf - 1 into the buffer tile t - 1 used
            t = nj_rel * nk + kj
            if cutlass.const_expr(p.ring_ahead):
                g0 = next(g for st, g, _ in p.ring_sequence() if st is s)
                t = t + g0  # the tile's index in the row tile's sequence
            buf = t % nbuf
            cute.arch.cp_async_wait_group(nbuf - 2)
            cute.arch.sync_threads()
            tn = t + nbuf - 1
            if cutlass.const_expr(p.ring_ahead):
                # the sequence's tile nbuf - 1 ahead, of this stage or a later one
                self.ring_issue(ctx, tn, g0 + nbuf - 1, g0 + nn * nk + nbuf - 1)
            else:
                if tn < (nj_end - nj_first) * nk:
                    self.ring_tile(ctx, s, gws, rings, vw, nj_first + tn // nk, tn % nk, tn % nbuf)
            cute.arch.cp_async_commit_group()  # (empty past the stage's last tile)
        elif cutlass.const_expr(nbuf == 2):
            buf = (nj_rel * nk + kj) % 2
            # prefetch the next tile into the other buffer (last read one tile ago,
            # before that tile's closing barrier)
            if kj + 1 < nk:
                self.ring_tile(ctx, s, gws, rings, vw, nj, kj + 1, 1 - buf)
            else:
                if nj + 1 < nj_end:
                    self.ring_tile(ctx, s, gws, rings, vw, nj + 1, 0, 1 - buf)
            cute.arch.cp_async_commit_group()  # (empty after the stage's last tile)
            cute.arch.cp_async_wait_group(1)
        else:
            if kj > 0:
                self.ring_tile(ctx, s, gws, rings, vw, nj, kj, 0)
            else:
                if nj > nj_first:
                    self.ring_tile(ctx, s, gws, rings, vw, nj, 0, 0)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
        if cutlass.const_expr(nbuf <= 2):
            cute.arch.sync_threads()
        if tid < active:
            if cutlass.const_expr(s.a_stream):
                # the streamed input's tile of k chunk kj, in this ring buffer
                sA = cute.make_tensor(
                    self.ring_a(base, s)[None, None, buf].iterator,
                    cute.make_layout((tm, kc), stride=(kc + p.smem_pad, 1)),
                )
            else:
                # src viewed as [tile_rows, k_chunk, k chunks]; k chunk kj (a mode, so that the
                # slice keeps the 16-byte alignment ldmatrix needs when kj is a runtime value)
                sA = cute.make_tensor(
                    src.iterator,
                    cute.make_layout((tm, kc, nk), stride=(p.values[s.src].row_stride, 1, kc)),
                )[None, None, kj]
            for m in cutlass.range_constexpr(s.mats):
                sB = cute.make_tensor(
                    rings[m][None, None, buf].iterator,
                    cute.make_layout((nc, kc), stride=(1, nc + p.smem_pad)),
                )
                self.mma(tiled_mma, thr_mma, thr_a, thr_b, sA, sB, accs[m])
            if kj == nk - 1:
                self.mm_epilogue(ctx, s, accs, tCc, nj * nc)
        if cutlass.const_expr(nbuf <= 2):
            # every warp is done with this buffer (and, after the last tile, the
            # epilogue's stores are visible to the next stage)
            cute.arch.sync_threads()
        elif kj == nk - 1:
            if nj_rel == nj_end - nj_first - 1:
                # the stage's last tile: its epilogue's stores visible to the next stage,
                # and every buffer read before the next stage's first tiles refill them
                cute.arch.sync_threads()

    @cute.jit
    def ring_tile(self, ctx, s: cutlass.Constexpr, gws, rings, vw, nj, kj, b):
        """The tile of stage s at n chunk nj, k chunk kj into ring buffer b: W's tiles (zero
        outside [K, N]) and a streamed input's k chunk, in the caller's cp.async group."""
        kc, nc = s.k_chunk, s.n_chunk
        for m in cutlass.range_constexpr(s.mats):
            self.stage(
                gws[m],
                rings[m][None, None, b],
                kj * kc,
                s.k - kj * kc,
                nj * nc,
                s.n - nj * nc,
                kc,
                nc,
                vw,
                ctx[7],
            )
        if cutlass.const_expr(s.a_stream):
            self.stage_a(ctx, s, b, kj)

    @cute.jit
    def ring_issue(self, ctx, g, lo: cutlass.Constexpr, hi: cutlass.Constexpr):
        """Tile g of the row tile's ring sequence (ring_ahead; lo <= g < hi, the range the
        caller can reach) into ring buffer g mod weight_buffers: the stage holding it found
        among the stages that range touches (nothing past the sequence's end)."""
        mWh = ctx[0]
        for s, g0, nt in self.p.ring_sequence():
            if cutlass.const_expr(g0 < hi and g0 + nt > lo):
                if g >= g0:
                    if g < g0 + nt:
                        gws = self.weights(mWh, s)
                        rings = [self.ring(ctx[4], s, m) for m in range(s.mats)]
                        nk = s.k_pad // s.k_chunk
                        t = g - g0
                        self.ring_tile(
                            ctx,
                            s,
                            gws,
                            rings,
                            _vec_elems(s.n, 2),
                            t // nk,
                            t % nk,
                            g % self.p.weight_buffers,
                        )

    @cute.jit
    def mm_epilogue(self, ctx, s: cutlass.Constexpr, accs, tCc, col0):
        """Bias, the fused epilogue (linear) or act(g) * u (gated), in fp32; stored at
        dst's dtype (zeros in dst's padding columns)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        f32 = cutlass.Float32
        for i in cutlass.range_constexpr(cute.size(accs[0])):
            r = tCc[i][0]
            c = col0 + tCc[i][1]
            v = f32(0.0)
            if c < s.n:
                if cutlass.const_expr(s.op == "linear"):
                    v = accs[0][i]
                    if cutlass.const_expr(s.b >= 0):
                        v = v + mWf[s.b + c]
                    for op, arg in s.epilogue:
                        if cutlass.const_expr(op == "act"):
                            v = _act(arg, v)
                        elif cutlass.const_expr(op == "add"):
                            v = v + self.read(ctx, arg, r, c)
                        else:
                            v = v * self.read(ctx, arg, r, c)
                else:
                    g = accs[0][i]
                    u = accs[1][i]
                    if cutlass.const_expr(s.bg >= 0):
                        g = g + mWf[s.bg + c]
                    if cutlass.const_expr(s.bu >= 0):
                        u = u + mWf[s.bu + c]
                    v = _act(s.fn, g) * u
            self.put(ctx, slots[s.dst], self.p.values[s.dst], r, c, v)

    @cute.jit
    def elementwise_stage(self, ctx, s: cutlass.Constexpr):
        """act / add over the tile: every thread a strided run of elements."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        dst = self.p.values[s.dst]
        pw = dst.padded_width
        if cutlass.const_expr(self.p.split_after(s.dst - 1)):
            # a split kernel's stage after its matmul: the block's column slice only
            ncs = (
                self.p.slice_chunks * self.p.stages[self.p.split_stage - self.p.first_stage].n_chunk
            )
            c0 = ext[1] * ncs
            for i in cutlass.range(tid, self.tm * ncs, self.threads):
                r = i // ncs
                c = c0 + (i - r * ncs)
                self.put(ctx, slots[s.dst], dst, r, c, self.elementwise_value(ctx, s, r, c))
        else:
            for i in cutlass.range(tid, self.tm * pw, self.threads):
                r = i // pw
                c = i - r * pw
                self.put(ctx, slots[s.dst], dst, r, c, self.elementwise_value(ctx, s, r, c))
        cute.arch.sync_threads()

    @cute.jit
    def elementwise_value(self, ctx, s: cutlass.Constexpr, r, c):
        """act / add at (r, c) in fp32; 0 in the padding columns."""
        v = cutlass.Float32(0.0)
        if c < self.p.values[s.dst].width:
            if cutlass.const_expr(s.op == "act"):
                v = _act(s.fn, self.read(ctx, s.src, r, c))
            else:
                v = self.read(ctx, s.a, r, c) + self.read(ctx, s.b_src, r, c)
        return v

    @cute.jit
    def norm_stage(self, ctx, s: cutlass.Constexpr):
        """A norm stage: softmax_stage, or moment_norm_stage (LayerNorm, RMSNorm)."""
        if cutlass.const_expr(s.kind == "softmax"):
            self.softmax_stage(ctx, s)
        else:
            self.moment_norm_stage(ctx, s)

    @cute.jit
    def moment_norm_stage(self, ctx, s: cutlass.Constexpr):
        """LayerNorm / RMSNorm over the features of each row: one warp per row
        (row_norm_stats), then scale (gamma) and shift (beta)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        f32 = cutlass.Float32
        p = self.p
        src = p.values[s.src]
        dst = p.values[s.dst]
        width = src.width
        ncol = (dst.padded_width + 31) // 32
        warp_id = tid // 32
        lane = tid % 32
        for rr in cutlass.range_constexpr((self.tm + p.warps - 1) // p.warps):
            r = warp_id + rr * p.warps
            if r < self.tm:
                mean, rstd = row_norm_stats(
                    slots[s.src], r, lane, width, s.kind == "layernorm", s.eps
                )
                for j in cutlass.range(ncol):
                    c = j * 32 + lane
                    v = f32(0.0)
                    if c < width:
                        v = (self.load(slots[s.src], self.f16(s.src), r, c) - mean) * rstd
                        if cutlass.const_expr(s.gamma >= 0):
                            v = v * mWf[s.gamma + c]
                        if cutlass.const_expr(s.beta >= 0):
                            v = v + mWf[s.beta + c]
                    self.put(ctx, slots[s.dst], self.p.values[s.dst], r, c, v)
        cute.arch.sync_threads()

    @cute.jit
    def softmax_stage(self, ctx, s: cutlass.Constexpr):
        """Softmax over the features of each row, one warp per row: the max, the sum of
        exp(x - max) (butterfly shuffles, fp32), then exp(x - max) / sum (the model of the
        bound, src/chain/ref.c rf_softmax_row)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        f32 = cutlass.Float32
        p = self.p
        width = p.values[s.src].width
        ncol = (p.values[s.dst].padded_width + 31) // 32
        nsum = (width + 31) // 32
        warp_id = tid // 32
        lane = tid % 32
        for rr in cutlass.range_constexpr((self.tm + p.warps - 1) // p.warps):
            r = warp_id + rr * p.warps
            if r < self.tm:
                m = f32(-math.inf)
                for j in cutlass.range(nsum):
                    c = j * 32 + lane
                    if c < width:
                        m = cute.arch.fmax(m, self.load(slots[s.src], self.f16(s.src), r, c))
                m = cute.arch.warp_reduction_max(m)
                acc = f32(0.0)
                for j in cutlass.range(nsum):
                    c = j * 32 + lane
                    if c < width:
                        x = self.load(slots[s.src], self.f16(s.src), r, c)
                        acc = acc + cute.math.exp(x - m)
                total = cute.arch.warp_reduction_sum(acc)
                for j in cutlass.range(ncol):
                    c = j * 32 + lane
                    v = f32(0.0)
                    if c < width:
                        x = self.load(slots[s.src], self.f16(s.src), r, c)
                        v = cute.math.exp(x - m) / total
                    self.put(ctx, slots[s.dst], p.values[s.dst], r, c, v)
        cute.arch.sync_threads()

    @cute.jit
    def copy_out(self, ctx):
        """Y from its slot to global memory (when the planner gave Y a slot)."""
        mWh, mWf, mY, slots, base, row0, nrows, tid, ext = ctx
        y = self.p.values[-1]
        for i in cutlass.range(tid, self.tm * y.width, self.threads):
            r = i // y.width
            c = i - r * y.width
            if r < nrows:
                mY[row0 + r, c] = slots[y.id][r, c]
        cute.arch.sync_threads()


class SegmentKernel(ChainKernel):
    """One kernel of a chain's conventional schedule (the spec's "segment"): its stages run
    like the whole chain's kernel's, with its inputs staged from X or the scratch at each
    tile's start and every value a later kernel reads stored to the scratch (module
    docstring). Work items are row tiles x column slices."""

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
        self.kernel(mX, mWh, mWf, mY, mA, rows).launch(
            grid=(grid, 1, 1),
            block=(self.threads, 1, 1),
            smem=self.p.smem_bytes,
            stream=stream,
        )

    @cute.kernel
    def kernel(
        self,
        mX: cute.Tensor,
        mWh: cute.Tensor,
        mWf: cute.Tensor,
        mY: cute.Tensor,
        mA: cute.Tensor,
        rows: cutlass.Int32,
    ):
        p, tm = self.p, self.tm
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        nblk, _, _ = cute.arch.grid_dim()
        smem = cutlass.utils.SmemAllocator()
        base = smem.allocate(p.smem_bytes, 128)
        slots = [self.slot(base, v) for v in p.values]
        # each value's tensor in global memory: X, the scratch's columns, else None
        gvals = [mX] + [self.aux_view(mA, v, rows) for v in p.values[1:]]
        ntiles = (rows + tm - 1) // tm
        for item in cutlass.range(bid, ntiles * p.slices, nblk):
            tile = item // p.slices
            sl = item - tile * p.slices
            row0 = tile * tm
            nrows = rows - row0
            for v in p.inputs:
                val = p.values[v]
                if cutlass.const_expr(v == 0):
                    self.stage(
                        mX, slots[0], row0, nrows, 0, p.in_width, tm, val.padded_width, self.vx, tid
                    )
                else:
                    self.stage(
                        gvals[v],
                        slots[v],
                        row0,
                        nrows,
                        0,
                        val.padded_width,
                        tm,
                        val.padded_width,
                        16 // val.elem_bytes,
                        tid,
                    )
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.sync_threads()
            ctx = (mWh, mWf, mY, slots, base, row0, nrows, tid, (gvals, sl))
            self.run_stages(ctx)

    def aux_view(self, mA, v: Value, rows):
        """Value v's columns of the scratch, [rows, padded_width] at its dtype (None when
        it is not in the scratch)."""
        if v.glob != "aux":
            return None
        ptr = mA.iterator + v.aux_col
        stride = self.p.aux_row
        if v.dtype == "f32":
            ptr = cute.recast_ptr(ptr, dtype=cutlass.Float32)
            stride = self.p.aux_row // 2
        return cute.make_tensor(ptr, cute.make_layout((rows, v.padded_width), stride=(stride, 1)))


def make_kernel(plan: ChainPlan) -> ChainKernel:
    """The generator of a chain_mma entry: the whole chain's kernel, or a conventional
    schedule's kernel."""
    return SegmentKernel(plan) if plan.segment else ChainKernel(plan)


def compile_args(plan: ChainPlan):
    """The fake arguments the kernel is compiled (and exported) for: x [rows, C] fp16,
    wh [wh_extent] fp16, wf [wf_extent] fp32, y [rows, N_out] fp32, rows, grid, stream;
    rows is the one dynamic extent."""
    fake = fake_tensor
    rows = cute.SymInt()
    head = (
        fake(cutlass.Float16, (rows, plan.in_width)),
        fake(cutlass.Float16, (plan.wh_extent(),)),
        fake(cutlass.Float32, (plan.wf_extent(),)),
        fake(cutlass.Float32, (rows, plan.out_width)),
    )
    if plan.segment:
        # the scratch [rows, aux_row] fp16 (one 16-byte column when no value goes there)
        head += (fake(cutlass.Float16, (rows, max(plan.aux_row, 8))),)
    return (*head, 1, 1, cuda.CUstream(0))


__all__ = [
    "ACTS",
    "MODE",
    "ChainKernel",
    "ChainPlan",
    "SegmentKernel",
    "SpecError",
    "Stage",
    "Value",
    "compile_args",
]
