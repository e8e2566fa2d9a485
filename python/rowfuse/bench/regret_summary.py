"""The scheduler's out-of-sample regret (`tests/gpu/gpu run regret`): per shape the scheduler's
choice, the fastest variant measured and regret = span(choice) / span(best) - 1, then the
median and worst regret and how often the choice was the fastest (or tied with it: their
bootstrap 95% intervals of the median overlap).

    python3 -m rowfuse.bench.regret_summary build-gpu/regret OUT

Reads REGRET/shapes.tsv (`tests/gpu/gpu prepare regret`), REGRET/pkgs/NAME/plan.json (which
schedules the package could build) and OUT/json/NAME.json (`rowfuse bench --c`) and
OUT/status.tsv (name, exit status, seconds; "skipped" when the time budget ran out).
Writes OUT/regret.md and OUT/regret.json and prints the table. A variant the package
could not build is "not buildable" and is not a candidate for the best; a choice that
cannot be built has infinite regret. Exits 1 when any variant that could be built failed
or any shape with a package was not measured.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys

VARIANTS = (
    "persistent-smem",
    "persistent-gmem",
    "conventional",
    "persistent-wgmma",
    "cublaslt",
)


def read_shapes(path: str) -> list[dict]:
    out = []
    with open(path) as f:
        for line in f:
            rows, c, h, regime, choice, built, note = line.rstrip("\n").split("\t")
            out.append(
                {
                    "name": f"{rows}x{c}x{h}",
                    "rows": int(rows),
                    "channels": int(c),
                    "hidden": int(h),
                    "regime": regime,
                    "choice": choice,
                    "built": built,
                    "note": note,
                }
            )
    return out


def judge(shape: dict, doc: dict | None, plan: dict | None, status: str | None) -> dict:
    """One shape's row: spans of every variant, the best, the choice's regret and a verdict
    ('measured', 'no package', 'not run', 'FAILED')."""
    row = dict(shape, spans={}, failed={}, unbuildable=[], verdict="measured")
    if shape["built"] == "none":
        row["verdict"] = "no package"
        return row
    if doc is None:
        row["verdict"] = "not run" if status == "skipped" else "FAILED"
        row["failed"]["run"] = f"no JSON (bench exit {status})"
        return row
    avail = {n: s.get("available", False) for n, s in (plan or {}).get("schedules", {}).items()}
    for v in doc["runs"][0]["variants"]:
        name = v["name"]
        if name not in VARIANTS:
            continue
        if not avail.get(name, False):
            row["unbuildable"].append(name)
            continue
        span = None if "error" in v else (v.get("graph") or {}).get("span_us")
        if span:
            row["spans"][name] = span
        else:
            row["failed"][name] = v.get("error") or (v.get("graph") or {}).get("span_note", "?")
    if row["failed"]:
        row["verdict"] = "FAILED"
    if not row["spans"]:
        return row
    best = min(row["spans"], key=lambda n: row["spans"][n]["median"])
    row["best"] = best
    # the package's own plan when auto built it: the choice after the generator's facts
    # (a heavily spilling kernel leaves the competition there, not in `rowfuse schedule`)
    if plan and shape["built"] == "auto" and plan.get("schedule"):
        row["choice"] = plan["schedule"]
    choice = row["choice"]
    if choice in row["unbuildable"]:
        row["regret"] = math.inf
        row["tie"] = False
    elif choice in row["spans"]:
        a, b = row["spans"][choice], row["spans"][best]
        row["regret"] = a["median"] / b["median"] - 1.0
        row["tie"] = (
            "median_ci_lo" in a
            and "median_ci_lo" in b
            and a["median_ci_lo"] <= b["median_ci_hi"]
            and b["median_ci_lo"] <= a["median_ci_hi"]
        )
    return row


def summarize(rows: list[dict]) -> dict:
    judged = [r for r in rows if "regret" in r]
    regrets = [r["regret"] for r in judged]
    return {
        "shapes": len(rows),
        "judged": len(judged),
        "picked_best": sum(1 for r in judged if r["regret"] == 0.0),
        "picked_best_or_tie": sum(1 for r in judged if r["regret"] == 0.0 or r["tie"]),
        "median_regret": statistics.median(regrets) if regrets else None,
        "max_regret": max(regrets) if regrets else None,
        "no_package": sum(1 for r in rows if r["verdict"] == "no package"),
        "not_run": sum(1 for r in rows if r["verdict"] == "not run"),
        "failed": sum(1 for r in rows if r["verdict"] == "FAILED"),
    }


def _pct(x) -> str:
    if x is None:
        return "-"
    return "inf (choice cannot be built)" if math.isinf(x) else f"{100 * x:.1f}%"


def render(rows: list[dict], s: dict, method: str) -> str:
    out = [
        "# Scheduler regret on out-of-sample shapes",
        "",
        method,
        "",
        "| shape | regime | GFLOP | choice | its span | fastest | its span | regret | "
        "other spans (us) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        gf = 4e-9 * r["rows"] * r["channels"] * r["hidden"]
        head = f"| {r['name']} | {r['regime']} | {gf:.2f} | {r['choice']} "
        if "best" not in r:
            why = r["verdict"] + (f": {r['note']}" if r["verdict"] == "no package" else "")
            if r["failed"]:
                why += ": " + "; ".join(f"{k}: {v}" for k, v in r["failed"].items())[:200]
            out.append(head + f"| - | - | - | - | {why} |")
            continue
        mine = r["spans"].get(r["choice"])
        best = r["spans"][r["best"]]["median"]
        tie = " (tie)" if r.get("tie") and r.get("regret", 0) > 0 else ""
        others = ", ".join(
            f"{n} {sp['median']:.2f}" for n, sp in sorted(r["spans"].items()) if n != r["best"]
        )
        if r["unbuildable"]:
            others += "; not buildable: " + ", ".join(r["unbuildable"])
        if r["failed"]:
            others += "; FAILED: " + ", ".join(r["failed"])
        mine_txt = "-" if mine is None else f"{mine['median']:.2f}"
        out.append(
            head
            + f"| {mine_txt} | {r['best']} | {best:.2f} "
            + f"| {_pct(r.get('regret'))}{tie} | {others} |"
        )
    out += [
        "",
        f"Judged {s['judged']} of {s['shapes']} shapes ({s['no_package']} without a package: no "
        f"rowfuse kernel fits; {s['not_run']} not run; {s['failed']} FAILED). The choice was "
        f"the fastest at {s['picked_best']}, fastest or tied at {s['picked_best_or_tie']}; "
        f"median regret {_pct(s['median_regret'])}, worst {_pct(s['max_regret'])} "
        "(issue 9's target: median span ratio <= 1.05, worst <= 1.25, i.e. regret <= 5% / 25%).",
        "",
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    regret_dir, out = argv
    status = {}
    try:
        with open(os.path.join(out, "status.tsv")) as f:
            for line in f:
                name, rc, _secs = line.rstrip("\n").split("\t")
                status[name] = rc
    except OSError:
        pass
    rows, method = [], "No run recorded its method."
    for shape in read_shapes(os.path.join(regret_dir, "shapes.tsv")):
        doc = plan = None
        try:
            with open(os.path.join(out, "json", shape["name"] + ".json")) as f:
                doc = json.load(f)
            m = doc["method"]
            method = (
                f"`rowfuse bench --c`, {m['rounds']} rounds x {m['observations']} observations "
                f"per variant (fewer than the full bench's 5 x 200, to fit the time budget), GPU "
                f"span from CUPTI over those observations ({m.get('span_source', '?')}); "
                f"regret = span(choice) / span(fastest) - 1, medians; the choice is "
                "`rowfuse schedule` (src/compile/schedule.c) for the shape."
            )
        except (OSError, ValueError, KeyError):
            doc = None
        try:
            with open(os.path.join(regret_dir, "pkgs", shape["name"], "plan.json")) as f:
                plan = json.load(f)
        except (OSError, ValueError):
            plan = None
        rows.append(judge(shape, doc, plan, status.get(shape["name"])))
    s = summarize(rows)
    md = render(rows, s, method)
    with open(os.path.join(out, "regret.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "regret.json"), "w") as f:
        json.dump({"summary": s, "shapes": rows}, f, indent=1, default=str)
    print(md)
    return 1 if s["failed"] or s["not_run"] else 0


if __name__ == "__main__":
    sys.exit(main())
