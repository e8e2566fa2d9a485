"""The GPU runs' shapes (tests/gpu/gpu), one "rows channels hidden" per line.

The check's shapes: the reference shape (49 rows: a partial row tile), a shape of whole
tiles, a partial tile in every dimension (the three compute-sanitizer shapes), then N
seeded random ones (rows 1..5000, C and H 8..256, 60% not multiples of 16), each (C, H)
once.

    python3 -m rowfuse.bench.shapes --seed 2026 --random 20

With --gates N: the planted-fault shapes (`tests/gpu/gpu run gates`), one "rows channels
hidden class" per line: N seeded shapes per class of GATE_CLASSES plus two fixed ones,
each with partial tiles where its class has them (see gates_shapes).

With --regret N: the scheduler's out-of-sample shapes instead (`tests/gpu/gpu run regret`),
one "rows channels hidden regime" per line, drawn per regime (never a development shape):
  tiny      latency-bound: rows 1..256, C and H 8..256
  memory    memory-bound, many rows, few channels: rows 50k..500k, C 8..64, H 8..128
  compute   compute-bound, wide: rows 256..8192, C 256..1024, H 512..2048
  partial   partial tiles everywhere: rows 1k..50k not a multiple of 64, C and H 24..600
            not multiples of 16
  any       log-uniform over rows 1..500k, C 8..1024, H 8..2048
  wide      C 1025..2048 (the issue's full range; no rowfuse kernel fits there today, so
            these show what the scheduler's choice does where only cuBLASLt could run)
  few       few row tiles, where persistent-wgmma runs a block pair per tile: rows
            65..4224 (2..66 tiles of 64), C 32..256, H 64..1024
  blocked   the blocked weight ring (C over two warpgroups, streamed weights): rows
            2k..40k, C 264..512, H 512..2048; up to 40 GFLOP (the bench's reference is
            multithreaded; the GPU check's shapes stay small)
With --only REGIME all N shapes come from that one regime (any N >= 1).
The draw is log-uniform within each regime's ranges. The GPU check computes the CPU
reference of every shape (~6-14 s per GFLOP on one core), so FLOPs are capped: 1.5 GFLOP
per shape, 2.6..3.5 GFLOP for two shapes drawn past the scheduler's 2.5 GFLOP crossover
(one compute, one memory: where it switches to cuBLASLt), 1 GFLOP for the wide ones.

    python3 -m rowfuse.bench.shapes --seed 2027 --regret 24
"""

from __future__ import annotations

import argparse
import math
import random


def shapes(seed: int, n: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    out = [(49, 48, 96), (64, 64, 128), (100, 40, 72)]
    seen = {(c, h) for _, c, h in out}
    while len(out) < 3 + n:
        rows = rng.choice([1, 2, 3, 7, 15, 17, 33]) if rng.random() < 0.25 else rng.randint(1, 5000)
        if rng.random() < 0.6:
            c, h = rng.randint(8, 256), rng.randint(8, 256)
        else:
            c, h = 16 * rng.randint(1, 16), 16 * rng.randint(1, 16)
        if (c, h) not in seen:
            seen.add((c, h))
            out.append((rows, c, h))
    return out


DEV_SHAPES = {
    (49, 48, 96),
    (64, 64, 128),
    (1000, 96, 200),
    (4096, 128, 512),
    (131072, 32, 64),
    (8192, 512, 2048),
}
FLOP_CAP = 1.5e9
CROSSOVER = (2.6e9, 3.5e9)  # above the scheduler's ~2.5 GFLOP line (src/compile/schedule.c)
WIDE_CAP = 1.0e9
BLOCKED_CAP = 40e9

# regime: (rows range, C range, H range), ranges inclusive
REGIMES = {
    "tiny": ((1, 256), (8, 256), (8, 256)),
    "memory": ((50_000, 500_000), (8, 64), (8, 128)),
    "compute": ((256, 8192), (256, 1024), (512, 2048)),
    "partial": ((1000, 50_000), (24, 600), (24, 600)),
    "any": ((1, 500_000), (8, 1024), (8, 2048)),
    "wide": ((1, 2000), (1025, 2048), (8, 2048)),
    "few": ((65, 4224), (32, 256), (64, 1024)),
    "blocked": ((2000, 40_000), (264, 512), (512, 2048)),
}


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def regret_shapes(
    seed: int, n: int, align: int = 1, only: str | None = None
) -> list[tuple[int, int, int, str]]:
    """n >= 12 shapes: two wide ones, a compute and a memory one past the crossover, the
    rest spread over tiny, memory, compute, partial and any in turn; or, with `only`, n
    shapes of that one regime. align > 1 rounds C and H up to its multiples (a set where
    the Hopper kernel, which needs multiples of 8, competes); partial shapes then keep
    their partial row tile only."""
    rng = random.Random(seed)
    if only:
        if only not in REGIMES:
            raise ValueError(f"unknown regime {only!r} (known: {', '.join(REGIMES)})")
        plan = [only] * n
    else:
        if n < 12:
            raise ValueError("at least 12 regret shapes (2 wide, 2 crossover, 8 across regimes)")
        plan = ["wide", "wide", "crossover-compute", "crossover-memory"]
        cycle = ["tiny", "memory", "compute", "partial", "any"]
        plan += [cycle[i % len(cycle)] for i in range(n - len(plan))]
    out, seen = [], set(DEV_SHAPES)
    for regime in plan:
        while True:
            base = regime.removeprefix("crossover-")
            r_rng, c_rng, h_rng = REGIMES[base]
            if base != regime:  # uniform C and H reach the crossover more often
                rows, c, h = (_log_uniform(rng, *r_rng), rng.randint(*c_rng), rng.randint(*h_rng))
            else:
                rows, c, h = (_log_uniform(rng, *r) for r in (r_rng, c_rng, h_rng))
            if regime == "partial":
                rows += 1 if rows % 64 == 0 else 0
                c += 1 if c % 16 == 0 else 0
                h += 1 if h % 16 == 0 else 0
            if align > 1:
                c, h = (-(-v // align) * align for v in (c, h))
            flops = 4.0 * rows * c * h
            lo, hi = (
                CROSSOVER
                if base != regime
                else (0.0, {"wide": WIDE_CAP, "blocked": BLOCKED_CAP}.get(regime, FLOP_CAP))
            )
            if lo <= flops <= hi and (rows, c, h) not in seen:
                break
        seen.add((rows, c, h))
        out.append((rows, c, h, base))
    return out


# class: (rows range, C range, H range, partial): the regimes of the schedules a planted
# fault can sit in. partial: rows not a multiple of 16 and C, H multiples of 8 but not of
# 16 (partial tiles in every dimension, while the Hopper kernel, which needs multiples of
# 8, stays in the package); whole: rows a multiple of 64 and C, H multiples of 16.
GATE_CLASSES = {
    "tiny": ((2, 256), (24, 256), (24, 256), "partial"),
    "partial": ((257, 5000), (24, 256), (24, 256), "partial"),
    "many": ((5000, 40_000), (8, 64), (8, 128), "partial"),
    "few": ((65, 4224), (32, 256), (256, 1024), "partial"),
    "blocked": ((100, 2000), (264, 512), (512, 1024), "partial"),
    "whole": ((64, 4096), (16, 256), (16, 512), "whole"),
}
# Shapes where planted faults were seen to pass before (kept in every draw): 100x40x72,
# partial tiles in every dimension, and 777x24x200 (no-barrier and no-pad passed every
# variant there while the fused kernels' unwritten shared memory held zeros).
GATE_FIXED = [(100, 40, 72, "tiny"), (777, 24, 200, "partial")]
GATE_FLOP_CAP = 0.4e9  # the check's CPU reference of every shape, several at once


def _gate_round(v: int, partial: bool, step: int) -> int:
    """v made a multiple of 8 that is not one of 16 (partial) or a multiple of `step`."""
    if partial:
        v = max(8, -(-v // 8) * 8)
        return v + 8 if v % 16 == 0 else v
    return max(step, -(-v // step) * step)


def gates_shapes(seed: int, per_class: int = 1) -> list[tuple[int, int, int, str]]:
    """GATE_FIXED, then per_class seeded shapes from each class of GATE_CLASSES (log-uniform
    within its ranges, at most GATE_FLOP_CAP, no shape twice)."""
    rng = random.Random(seed)
    out = list(GATE_FIXED)
    seen = {s[:3] for s in out}
    for cls, (r_rng, c_rng, h_rng, kind) in GATE_CLASSES.items():
        for _ in range(per_class):
            while True:
                rows, c, h = (_log_uniform(rng, *r) for r in (r_rng, c_rng, h_rng))
                if kind == "partial":
                    rows += 1 if rows % 16 == 0 else 0
                    c, h = _gate_round(c, True, 8), _gate_round(h, True, 8)
                else:
                    rows = _gate_round(rows, False, 64)
                    c, h = _gate_round(c, False, 16), _gate_round(h, False, 16)
                ok = c_rng[0] <= c <= c_rng[1] + 8 and h_rng[0] <= h <= h_rng[1] + 8
                if ok and 4.0 * rows * c * h <= GATE_FLOP_CAP and (rows, c, h) not in seen:
                    break
            seen.add((rows, c, h))
            out.append((rows, c, h, cls))
    return out


# the decode regime's random set: FFN kinds of rowfuse.blocks with their weight elements
# per c x h, weights in bytes, rows, the hidden-to-input ratio
DECODE_KINDS = {"llama_ffn": 3, "gpt2_ffn": 2}
DECODE_BYTES = (1e6, 4e8)
DECODE_ROWS = (1, 64)
DECODE_RATIO = (2.0, 6.0)


def decode_shapes(seed: int, n: int) -> list[tuple[str, int, int, int, int]]:
    """n decode-regime shapes (kind, c, h, rows, fp16 weight bytes): the kind alternating
    between a SwiGLU and a GELU FFN, the weights log-uniform in DECODE_BYTES, h / c uniform
    in DECODE_RATIO, c and h multiples of 64 (c at least 128), rows log-uniform in
    DECODE_ROWS. The bytes are those of the rounded widths (within ~10% of the draw)."""
    rng = random.Random(seed)
    kinds = sorted(DECODE_KINDS)
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        per = DECODE_KINDS[kind]
        nbytes = math.exp(rng.uniform(*(math.log(b) for b in DECODE_BYTES)))
        ratio = rng.uniform(*DECODE_RATIO)
        c = max(128, 64 * round(math.sqrt(nbytes / (2 * per * ratio)) / 64))
        h = max(64, 64 * round(nbytes / (2 * per * c) / 64))
        rows = _log_uniform(rng, *DECODE_ROWS)
        out.append((kind, c, h, rows, 2 * per * c * h))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--random", type=int, default=20)
    ap.add_argument("--regret", type=int, default=0, help="N out-of-sample scheduler shapes")
    ap.add_argument("--gates", type=int, default=0, help="N planted-fault shapes per class")
    ap.add_argument("--decode", type=int, default=0, help="N decode-regime FFN shapes")
    ap.add_argument("--align", type=int, default=1, help="regret shapes: C, H multiples of N")
    ap.add_argument("--only", help="regret shapes: all from this regime")
    a = ap.parse_args()
    if a.gates:
        for s in gates_shapes(a.seed, a.gates):
            print(*s)
        return
    if a.decode:
        for s in decode_shapes(a.seed, a.decode):
            print(*s)
        return
    if a.regret:
        for s in regret_shapes(a.seed, a.regret, a.align, a.only):
            print(*s)
        return
    for s in shapes(a.seed, a.random):
        print(*s)


if __name__ == "__main__":
    main()
