"""Rooflines of the residual MLP block that count where the bytes live (no GPU, no torch).

The block Y = ReLU(fp16(ReLU(X W1 + b1)) W2 + b2 + X) at M rows, C channels, H hidden:

    FLOPs       4 M C H (two GEMMs)
    bytes       X fp16 (2 M C), W1 and W2 fp16 (2 C H each), b1 and b2 fp32 (4 H + 4 C),
                Y fp32 (4 M C); a schedule that passes H through global memory
                (persistent-gmem, conventional, cuBLASLt) also writes and reads H fp16
                (2 M H each way, 2 M H of footprint).
    working set the footprint: X + W1 + W2 + b1 + b2 + Y (+ H).

Which memory serves those bytes depends on the working set. The bench replays one graph
over and over on the same buffers, so after the first replay a working set that fits in
L2 is served from L2 and almost nothing reaches HBM (Y is written back only on eviction).
So:
  - resident (working set <= half the L2, 25 MB on the H200: Hopper's L2 is two
    partitions and a line read by SMs on both sides may be held in both), the memory
    bound is bytes / L2 bandwidth;
  - uncertain (between half and all of the L2): both bounds are stated and the L2 one is
    used, because the roofline must be a time no kernel can beat;
  - streaming (larger than the L2): every byte is compulsory HBM traffic, bytes / HBM
    bandwidth.
The roofline time is the larger of that memory bound and FLOPs / tensor rate. The rates
are defaults measured on the H200 in earlier runs (4.3 TB/s device-to-device copy and
~790 TFLOP/s dense fp16 from a large cuBLASLt GEMM; notes/bench.md); a C run's own
ceilings replace them and an L2 rate that is assumed, not measured (10 TB/s; published Hopper
measurements range over ~5.5-12 TB/s), so a resident shape's bound is an estimate, and
the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass

# schedules whose H goes through global memory (rowfuse/plan.h names)
H_THROUGH_GLOBAL = ("persistent-gmem", "conventional", "cublaslt")


@dataclass(frozen=True)
class Target:
    name: str
    l2_bytes: float
    hbm_bytes_per_s: float
    l2_bytes_per_s: float
    flops_per_s: float


H200 = Target(
    "h200", l2_bytes=50e6, hbm_bytes_per_s=4.3e12, l2_bytes_per_s=10e12, flops_per_s=790e12
)


def traffic(rows: int, channels: int, hidden: int, schedule: str) -> dict:
    """Bytes of each operand, the footprint (working set) and the bytes moved per replay."""
    m, c, h = rows, channels, hidden
    parts = {
        "x": 2 * m * c,
        "weights": 2 * 2 * c * h,
        "biases": 4 * h + 4 * c,
        "y": 4 * m * c,
        "h": 2 * m * h if schedule in H_THROUGH_GLOBAL else 0,
    }
    working_set = sum(parts.values())
    moved = working_set + parts["h"]  # H is written once and read once
    return {**parts, "working_set": working_set, "bytes": moved}


def bound(rows: int, channels: int, hidden: int, schedule: str, target: Target = H200) -> dict:
    """The roofline of one replay of `schedule` at the shape: FLOP, HBM and L2 times (us),
    where the working set lives, the time used and what limits it."""
    t = traffic(rows, channels, hidden, schedule)
    flops = 4.0 * rows * channels * hidden
    t_flop = flops / target.flops_per_s * 1e6
    t_hbm = t["bytes"] / target.hbm_bytes_per_s * 1e6
    t_l2 = t["bytes"] / target.l2_bytes_per_s * 1e6
    ws = t["working_set"]
    if ws <= target.l2_bytes / 2:
        where, t_mem = "L2-resident", t_l2
    elif ws <= target.l2_bytes:
        where, t_mem = "L2 (uncertain)", t_l2
    else:
        where, t_mem = "HBM", t_hbm
    used = max(t_flop, t_mem)
    return {
        "flops": flops,
        "bytes": t["bytes"],
        "working_set": ws,
        "where": where,
        "flop_us": t_flop,
        "hbm_us": t_hbm,
        "l2_us": t_l2,
        "roofline_us": used,
        "limit": "FLOPs" if t_flop >= t_mem else ("HBM" if where == "HBM" else "L2"),
    }
