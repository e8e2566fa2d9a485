"""Per-block timeline of the weight-streaming kernel: runs a timeline build (`rowfuse compile
--timeline`, kernel chain_stream) and reads the global-timer stamps its blocks wrote into
the scratch (src/compile/chain_stream.h, RF_STREAM_STAMPS), to tell how long the stream
takes on each SM and how long the launch waits after it.

    python -m rowfuse.bench.timeline PKGDIR --rows N [--launches K] [--cold] [-o OUT.json]

Each launch overwrites the stamps; the last launch's are read. With --cold a buffer larger
than the L2 is written before that launch, so the weights come from memory. The stamps are
the low 32 bits of the global timer in ns (its resolution is the device's); the summary
gives, per row tile, each phase's time since the earliest block start over the blocks
(minimum, median, maximum) and the derived spans."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

PHASES = ("start", "x_ready", "hidden", "partials", "arrived", "all_arrived", "done")


def unwrap(raw: np.ndarray) -> np.ndarray:
    """ns since the earliest stamp, from low-32-bit timer values all within 2^31 ns of the
    first block's first stamp (int64)."""
    ref = np.int64(raw.reshape(-1)[0])
    d = (raw.astype(np.int64) - ref + (1 << 31)) % (1 << 32) - (1 << 31)
    return d - d.min()


def stamps_of(scratch: np.ndarray, kernel: dict, rows: int) -> np.ndarray:
    """The stamps [row tiles, blocks, stamps] (int64 ns since the earliest) in a chain_stream
    kernel's scratch (int32 words: the partials, then per row tile the counters and the
    stamps; rowfuse.torch.stream_scratch_bytes)."""
    blocks, stamps = int(kernel["blocks"]), int(kernel["stamps"])
    per_row, per_tile = (
        int(kernel["scratch_partial_per_row"]),
        int(kernel["scratch_counters_per_tile"]),
    )
    tiles = -(-rows // int(kernel["tile_rows"]))
    words = scratch.view(np.int32)
    base = rows * per_row
    out = np.empty((tiles, blocks, stamps), np.int64)
    for t in range(tiles):
        off = base + t * per_tile + (per_tile - blocks * stamps)
        out[t] = words[off : off + blocks * stamps].reshape(blocks, stamps)
    used = len(PHASES)
    return unwrap(out[:, :, :used])


def _span(us: np.ndarray, a: str, b: str) -> list[float]:
    """Phase b less phase a per block: (min, median, max) in us."""
    d = us[:, PHASES.index(b)] - us[:, PHASES.index(a)]
    return [round(float(f(d)), 2) for f in (np.min, np.median, np.max)]


def summarize(t: np.ndarray) -> list[dict]:
    """Per row tile: each phase's (min, median, max) over blocks in us since the earliest
    start, and the spans: the launch (earliest start to latest done), the stream (a block's
    start to its partials stored), the wait (its arrival to every arrival seen), the
    reduction, and the tail (the median block's partials stored to the latest done)."""
    out = []
    for tile in t:
        us = tile / 1e3
        ph = {
            name: [round(float(f(us[:, i])), 2) for f in (np.min, np.median, np.max)]
            for i, name in enumerate(PHASES)
        }

        out.append(
            {
                "phases_us": ph,
                "launch_us": round(float(us[:, -1].max() - us[:, 0].min()), 2),
                "stream_us": _span(us, "start", "partials"),
                "wait_us": _span(us, "arrived", "all_arrived"),
                "reduce_us": _span(us, "all_arrived", "done"),
                "tail_us": round(
                    float(us[:, -1].max() - np.median(us[:, PHASES.index("partials")])), 2
                ),
            }
        )
    return out


def run(package: str, rows: int, launches: int, cold: bool, seed: int = 1) -> dict:
    import torch

    from rowfuse import torch as rft

    block = rft.ChainBlock(package, None, rows)
    kernel = block._stream
    if kernel is None or not kernel.get("timeline"):
        raise SystemExit(
            f"{package}: not a timeline build of chain_stream (rowfuse compile --timeline)"
        )
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, block.in_width, generator=g).to(torch.float16).to(block.device)
    y = torch.empty(rows, block.out_width, dtype=torch.float32, device=block.device)
    flush = torch.empty(1 << 28, dtype=torch.uint8, device=block.device) if cold else None
    for i in range(launches):
        if flush is not None and i == launches - 1:
            flush.fill_(i & 0xFF)  # 256 MB written: the weights leave the L2
        block._launch_into(x, y)
    torch.cuda.synchronize(block.device)
    scratch = block._scratch_for(rows).cpu().numpy()
    t = stamps_of(scratch, kernel, rows)
    return {
        "package": package,
        "rows": rows,
        "l2": "cold" if cold else "warm",
        "launches": launches,
        "blocks": int(kernel["blocks"]),
        "weight_bytes": int(kernel.get("weight_bytes", 0)),
        "tiles": summarize(t),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    res = run(a.package, a.rows, a.launches, a.cold)
    for i, tile in enumerate(res["tiles"]):
        print(
            f"{a.package} rows {a.rows} ({res['l2']} L2) tile {i}: launch {tile['launch_us']} us, "
            f"stream min/median/max {tile['stream_us']}, wait {tile['wait_us']}, "
            f"reduce {tile['reduce_us']}, tail {tile['tail_us']}"
        )
    if a.output:
        with open(a.output, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
