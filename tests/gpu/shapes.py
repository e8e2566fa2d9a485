"""The GPU check's shapes, one "rows channels hidden" per line: the reference shape (49
rows: a partial row tile), a shape of whole tiles, a partial tile in every dimension (the
three compute-sanitizer shapes), then N seeded random ones (rows 1..5000, C and H 8..256,
60% not multiples of 16), each (C, H) once.

    python3 tests/gpu/shapes.py --seed 2026 --random 20
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--random", type=int, default=20)
    a = ap.parse_args()
    for s in shapes(a.seed, a.random):
        print(*s)


if __name__ == "__main__":
    main()
