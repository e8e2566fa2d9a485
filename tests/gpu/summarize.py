"""Prints the GPU check's closing table and writes OUT/summary.json (tests/gpu/run.sh).

Usage: python3 tests/gpu/summarize.py OUT UNIT_RC CHECK_RC MISSING_PACKAGES
Reads OUT/check.json (rowfuse check --json) and OUT/sanitizer.tsv (shape, tool, errors,
exit status, seconds). Exits 0 only when every check row passed, the sanitizer reported
zero errors everywhere, and no package was missing.
"""

import json
import os
import sys


def main() -> int:
    out, unit_rc, check_rc, missing = (
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    try:
        with open(os.path.join(out, "check.json")) as f:
            check = json.load(f)
    except (OSError, ValueError) as e:
        print(f"no check.json: {e}")
        check = {"results": [], "device": {}}
    rows = check["results"]
    san = []
    try:
        with open(os.path.join(out, "sanitizer.tsv")) as f:
            for line in f:
                shape, tool, errs, rc, secs = line.rstrip("\n").split("\t")
                san.append(
                    {"shape": shape, "tool": tool, "errors": errs, "exit": rc, "seconds": secs}
                )
    except OSError:
        pass

    by_variant: dict[str, list] = {}
    for r in rows:
        by_variant.setdefault(r["variant"], []).append(r)
    dev = check["device"]
    print(f"device: {dev.get('name', '?')}  driver {dev.get('driver_version', '?')}")
    print(
        f"{'variant':<16} {'shapes':>6} {'passed':>6} {'max abs err':>12} {'max rel-L2':>11}"
        "  failures"
    )
    for v, rs in by_variant.items():
        ok = [r for r in rs if r["passed"]]
        ran = [r for r in rs if not r["error"]]
        worst_abs = max((r["max_abs_error"] or 0.0 for r in ran), default=float("nan"))
        worst_rel = max((r["rel_l2_error"] or 0.0 for r in ran), default=float("nan"))
        bad = [f"{r['rows']}x{r['channels']}x{r['hidden']}" for r in rs if not r["passed"]]
        print(
            f"{v:<16} {len(rs):>6} {len(ok):>6} {worst_abs:>12.3e} {worst_rel:>11.3e}"
            f"  {' '.join(bad[:6])}"
        )
    tools = ["memcheck", "racecheck", "synccheck", "initcheck"]
    shapes = sorted({s["shape"] for s in san}, key=lambda s: [int(x) for x in s.split("x")])
    print(f"{'sanitizer shape':<16} " + " ".join(f"{t:>10}" for t in tools))
    for shape in shapes:
        cells = []
        for t in tools:
            hit = [s for s in san if s["shape"] == shape and s["tool"] == t]
            cells.append(f"{hit[0]['errors']}err/rc{hit[0]['exit']}" if hit else "-")
        print(f"{shape:<16} " + " ".join(f"{c:>10}" for c in cells))
    san_ok = bool(san) and all(s["errors"] == "0" and s["exit"] == "0" for s in san)
    check_ok = bool(rows) and all(r["passed"] for r in rows) and check_rc == 0
    all_ok = check_ok and san_ok and unit_rc == 0 and missing == 0
    summary = {
        "device": check.get("device"),
        "unit_test_exit": unit_rc,
        "check_exit": check_rc,
        "check_rows": len(rows),
        "check_passed": sum(1 for r in rows if r["passed"]),
        "missing_packages": missing,
        "sanitizer": san,
        "passed": all_ok,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(
        f"RESULT: {'PASS' if all_ok else 'FAIL'}  unit rc={unit_rc}"
        f"  check {summary['check_passed']}/{len(rows)}"
        f"  sanitizer {'clean' if san_ok else 'NOT clean'}  missing packages {missing}"
    )
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
