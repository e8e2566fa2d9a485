"""The README's benchmark table, generated from the committed JSON of one run.

    python -m rowfuse.bench.readme notes/bench/run11.json            # print the table
    python -m rowfuse.bench.readme notes/bench/run11.json --write README.md
    python -m rowfuse.bench.readme notes/bench/run11.json --check README.md

The run's JSON (notes/bench/runN.json) holds its report's tables: per shape, one section
from the C host and one from the Python host, each row a variant with its "GPU span"
("1.57 us [p10, p90]"). The table takes the median GPU span of rowfuse's schedules and
cuBLASLt from the C host and of the Python peers from the Python host, and marks the
fastest in bold. In README.md it sits between the markers

    <!-- bench-table: notes/bench/runN.json -->  ...  <!-- bench-table end -->

`--check` exits 1 when the README's table differs from the one the JSON gives, naming the
first line that differs; `--write` replaces it. Exit 2 on unusable input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

# (column title, host, variant name in the report)
COLUMNS = [
    ("persistent-smem", "c", "persistent-smem + graph"),
    ("persistent-wgmma", "c", "persistent-wgmma + graph"),
    ("cuBLASLt", "c", "cuBLASLt (C) + graph"),
    ("Triton fused", "python", "Triton fused + graph"),
    ("torch.compile", "python", "torch.compile + graph"),
]
_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+) \(rows x channels x hidden\)$")
_MEDIAN = re.compile(r"^([0-9.]+) us\b")
BEGIN = "<!-- bench-table: {} -->"
END = "<!-- bench-table end -->"


class TableError(ValueError):
    """The run's JSON does not hold what the table needs."""


def spans(run: dict) -> tuple[list[str], dict]:
    """Shapes in report order and {(shape, host, variant): median GPU span in us}."""
    shapes, out = [], {}
    for sec in run.get("sections", []):
        m = _SHAPE.match(sec.get("section", ""))
        about = sec.get("about") or [""]
        if not m or about[0].split(" ")[0] not in ("c", "python"):
            continue
        shape, host = "x".join(m.groups()), about[0].split(" ")[0]
        if shape not in shapes:
            shapes.append(shape)
        for row in sec.get("rows", []):
            med = _MEDIAN.match(row.get("GPU span", ""))
            if med:
                out[(shape, host, row.get("variant"))] = float(med.group(1))
    if not shapes:
        raise TableError("no per-shape sections from a c or python host")
    return shapes, out


def table(run: dict) -> list[str]:
    """The markdown table's lines."""
    shapes, got = spans(run)
    lines = ["| shape (GPU span, us) | " + " | ".join(c[0] for c in COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 1) + "|")
    for shape in shapes:
        vals = [got.get((shape, host, name)) for _, host, name in COLUMNS]
        present = [v for v in vals if v is not None]
        if not present:
            raise TableError(f"{shape}: none of the table's variants was measured")
        best = min(present)
        cells = []
        for v in vals:
            text = "-" if v is None else f"{v:.2f}"
            cells.append(f"**{text}**" if v == best else text)
        lines.append(f"| {shape} | " + " | ".join(cells) + " |")
    return lines


def _block(text: str, source: str) -> tuple[int, int]:
    lines = text.split("\n")
    begin = BEGIN.format(source)
    try:
        b = lines.index(begin)
        e = lines.index(END, b)
    except ValueError:
        raise TableError(f"no '{begin}' ... '{END}' block in the README") from None
    return b, e


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rowfuse.bench.readme", description=__doc__)
    ap.add_argument("run", help="a run's JSON, e.g. notes/bench/run11.json")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="README", help="replace the table in README")
    group.add_argument("--check", metavar="README", help="exit 1 when README's table differs")
    args = ap.parse_args(argv)
    try:
        with open(args.run) as f:
            run = json.load(f)
        want = table(run)
        if not (args.write or args.check):
            print("\n".join(want))
            return 0
        path = args.write or args.check
        with open(path) as f:
            text = f.read()
        b, e = _block(text, args.run)
    except (OSError, ValueError) as err:
        print(f"rowfuse.bench.readme: {err}", file=sys.stderr)
        return 2
    lines = text.split("\n")
    have = lines[b + 1 : e]
    if args.check:
        for i, (h, w) in enumerate(zip(have + [""] * len(want), want, strict=False)):
            if h != w:
                print(
                    f"{path}:{b + 2 + i}: the table differs from {args.run}:\n"
                    f"  README: {h}\n  JSON:   {w}\n"
                    f"regenerate: python -m rowfuse.bench.readme {args.run} --write {path}",
                    file=sys.stderr,
                )
                return 1
        if len(have) != len(want):
            print(f"{path}: the table has {len(have)} lines, {args.run} gives {len(want)}")
            return 1
        return 0
    lines[b + 1 : e] = want
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
