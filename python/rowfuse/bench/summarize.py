"""The GPU runs' verdicts and closing tables (`tests/gpu/gpu run SUB...`).

The driver collects raw results (`rowfuse check --json` documents, compute-sanitizer
logs, `rowfuse bench --c` output) and asks this module what each one means; the rules live
here so that a test can feed them broken inputs and watch them fail:

- a check row is found only by its variant and the exact shape asked for; a missing
  document, a package that did not load, a timeout or an exit status that disagrees with
  the rows is a FAILED step, never a verdict about a kernel;
- a planted fault that changes results ("result" faults) is caught only when the check
  reports FAIL for the faulty variant at the planted shape; a pass there is "inert" where
  the kernel's geometry shows the fault cannot change the result (inert_reason, from
  plan.json), else "not caught" (a FAILED step: a hole in the check); an ERROR row is
  "error" (a FAILED step: the check could not judge the variant);
- a planted fault of the capture ("capture" faults: the kernel sent to another stream) is
  caught only when the check refuses the variant with a message naming the kernel nodes
  ("refused"), or when CUDA refuses the capture itself with an error naming the capture
  ("refused by CUDA"; the message is kept for the notes);
- a compute-sanitizer run is clean only with its summary line present, zero errors and
  exit status 0; a run that must see a planted race passes only with errors and the
  sanitizer's error exit status.

    python3 -m rowfuse.bench.summarize SUMMARY.json   # prints a run's tables again
"""

from __future__ import annotations

import json
import math
import re
import sys

RESULT, CAPTURE = "result", "capture"
SANITIZER_ERROR_EXIT = 99  # compute-sanitizer --error-exitcode
# statuses that fail the step they belong to
FAILING = {"FAILED", "error", "fail, not refused", "control FAILED", "not caught"}


# ---- rowfuse check documents ----


def shape_name(shape) -> str:
    return "x".join(str(int(v)) for v in shape)


def doc_failure(doc, rc, timed_out) -> str:
    """Why one `rowfuse check --json` run cannot speak for its variants ('' when it can):
    a timeout, no document, no rows, a package that did not load, or an exit status that
    disagrees with the rows (0 only when every row passed, 1 when one failed)."""
    if timed_out:
        return "timed out"
    if doc is None:
        return f"no JSON (rowfuse check exit {rc})"
    rows = doc.get("results") or []
    if not rows:
        return f"no result rows (rowfuse check exit {rc})"
    loads = [r for r in rows if r.get("variant") == "load"]
    if loads:
        return f"package did not load: {loads[0].get('error', '?')}"
    if rc not in (0, 1) or (rc == 0) != all(r.get("passed") for r in rows):
        return f"rowfuse check exit {rc} disagrees with its rows"
    return ""


def find_row(doc, rc, timed_out, variant, shape):
    """(row, None) for `variant` at `shape` (rows, channels, hidden) of one `rowfuse check
    --json` document, or (None, why) when the run cannot speak for it (doc_failure) or has
    no such row. A variant that failed before any shape ran (its row has 0 rows) is that
    variant's row."""
    why = doc_failure(doc, rc, timed_out)
    if why:
        return None, why
    want = tuple(int(v) for v in shape)
    mine = [r for r in doc["results"] if r.get("variant") == variant]
    for r in mine:
        if (r.get("rows"), r.get("channels"), r.get("hidden")) == want:
            return r, None
    for r in mine:
        if r.get("rows") == 0 and r.get("error"):
            return r, None
    return None, f"no result for {variant} at {shape_name(want)}"


def inert_reason(plan: dict, schedule: str, fault: str) -> str:
    """Why `fault` cannot change the result of `schedule`'s kernels in this package ('' when
    it can). no-pad (the zero padding of partial tiles left unwritten) and no-oob-fill (TMA
    boxes without zero fill past C and H): rows past the last one only feed output rows
    that are never stored (each row depends on itself alone), so these can change the
    result only where C or H is padded up to the kernel's tile (the padded columns are
    summed over). Every other fault has no such rule: a pass is a hole in the check."""
    if fault not in ("no-pad", "no-oob-fill"):
        return ""
    sched = (plan.get("schedules") or {}).get(schedule) or {}
    kernels = [plan["kernels"][i] for i in sched.get("kernels") or []]
    if kernels and all(
        k.get("padded_channels") == k.get("channels") and k.get("padded_hidden") == k.get("hidden")
        for k in kernels
    ):
        return "inert: C and H fill the kernel's tiles (no padded column to leave unwritten)"
    return ""


# CUDA errors a kernel raises while it runs (as opposed to loading or launching it)
DEVICE_FAULT = re.compile(
    r"cudaError(LaunchFailure|IllegalAddress|IllegalInstruction|MisalignedAddress|"
    r"LaunchTimeout|HardwareStackError|Assert|InvalidPc)\b"
)
# faults that are races: the output is wrong only when the timing lets the race show (a
# skipped wait, or a wait for the other phase parity, which a fresh or completed phase
# passes at once), so each is planted in a checking build and a pass of the check is
# followed by racecheck on the same kernel, which must see the race
RACE_FAULTS = ("no-barrier", "no-ring-wait", "ring-phase")


def judge_race(cell: dict, san: dict | None) -> dict:
    """A race fault's cell after the check: a "not caught" cell is caught when racecheck on
    the same fault package and schedule reported hazards (`san`: parse_sanitizer's verdict
    of that run, expecting errors)."""
    if cell["status"] != "not caught" or san is None:
        return cell
    if san["status"] == "caught":
        return dict(
            cell, status="caught", detail=f"by racecheck ({san['detail']}); {cell['detail']}"
        )
    return dict(cell, detail=f"{cell['detail']}; racecheck: {san['detail']}")


def judge_fault(row, why, kind=RESULT, inert="") -> dict:
    """The verdict on a planted fault's variant at its shape (find_row's output); `inert`:
    inert_reason's answer for it."""
    if why:
        return {"status": "FAILED", "detail": why}
    err = row.get("error") or ""
    if kind == CAPTURE:
        if err and re.search(r"kernel nodes?", err, re.I):
            return {"status": "refused", "detail": err}
        if err and re.search(r"captur", err, re.I):  # CUDA refused the capture itself
            return {"status": "refused by CUDA", "detail": err}
        if err:
            return {"status": "error", "detail": err}
        if row.get("passed"):
            return {"status": "FAILED", "detail": "passed: the fault changed nothing"}
        return {"status": "fail, not refused", "detail": "wrong result, but no refusal"}
    if err and DEVICE_FAULT.search(err):
        # the kernel ran and failed on the device during the checked replay (a trap, a
        # hang cut short, an illegal access): the check failed the variant. A package that
        # does not load or a job that could not run is an "error", never a catch.
        return {"status": "caught", "detail": f"the kernel failed on the device: {err}"}
    if err:
        return {"status": "error", "detail": err}
    if not row.get("passed"):
        return {
            "status": "caught",
            "detail": f"nonfinite {row.get('nonfinite')}, over allowance "
            f"{row.get('out_of_tolerance')}, steps {row.get('steps', math.nan):.3g}, replays "
            f"identical {bool(row.get('replays_identical'))}",
        }
    figures = (
        f"steps {row.get('steps', math.nan):.3g}, "
        f"{row.get('max_allow_ratio', math.nan):.3g} of the allowance"
    )
    if inert:
        return {"status": "inert", "detail": f"{inert}; {figures}"}
    return {"status": "not caught", "detail": figures}


def judge_control(row, why) -> dict:
    """A variant that must pass (a correct package's, or one the fault does not touch)."""
    if why:
        return {"status": "FAILED", "detail": why}
    if row.get("error"):
        return {"status": "control FAILED", "detail": row["error"]}
    if not row.get("passed"):
        return {
            "status": "control FAILED",
            "detail": f"FAIL: steps {row.get('steps')}, nonfinite {row.get('nonfinite')}",
        }
    return {"status": "ok", "detail": f"steps {row.get('steps', math.nan):.3g}"}


def judge_bench_refusal(rc, text, timed_out) -> dict:
    """`rowfuse bench --c` on a capture fault: it must exit non-zero naming the kernel
    nodes or the capture (the line that does is kept)."""
    if timed_out:
        return {"status": "FAILED", "detail": "timed out"}
    lines = [ln.strip() for ln in text.splitlines() if re.search(r"kernel nodes?", ln, re.I)]
    lines += [ln.strip() for ln in text.splitlines() if re.search(r"captur", ln, re.I)]
    if rc != 0 and lines:
        return {"status": "refused", "detail": lines[0][:300]}
    if rc == 0:
        return {"status": "FAILED", "detail": "rowfuse bench --c exit 0: not refused"}
    tail = text.strip().splitlines()[-1:] or ["no output"]
    return {"status": "FAILED", "detail": f"exit {rc} without naming kernel nodes: {tail[0]}"}


def affected_schedules(plan: dict, kind: str = RESULT) -> list[str]:
    """The schedules of a fault package whose kernels carry the planted fault (plan.json's
    kernels name it, in the generator's spelling; none: the fault does not apply at that
    shape); for a capture fault, which sits in the launcher of every kernel, every kernel
    schedule the package holds."""
    scheds = plan.get("schedules") or {}
    kernels = plan.get("kernels") or []
    avail = [n for n, s in scheds.items() if s.get("available") and n != "cublaslt"]
    if kind == CAPTURE:
        return avail
    return [
        n
        for n in avail
        if any(
            0 <= i < len(kernels) and kernels[i].get("fault")
            for i in scheds[n].get("kernels") or []
        )
    ]


# ---- compute-sanitizer logs ----


def parse_sanitizer(text, rc, timed_out, expect_errors=False, seconds=None) -> dict:
    """The verdict on one compute-sanitizer run from its log and exit status."""
    out = {"exit": rc, "seconds": seconds, "errors": None}
    race = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?", text)
    plain = re.findall(r"ERROR SUMMARY: (\d+) errors?", text)
    if race:
        out["errors"] = int(race[-1][1])
        out["hazards"] = int(race[-1][0])
    elif plain:
        out["errors"] = int(plain[-1])
    if timed_out:
        return dict(out, status="FAILED", detail=f"timed out after {seconds} s")
    if out["errors"] is None:
        last = text.strip().splitlines()[-1:] or ["no output"]
        return dict(out, status="FAILED", detail=f"no sanitizer summary (exit {rc}): {last[0]}")
    if expect_errors:
        if out["errors"] > 0 and rc == SANITIZER_ERROR_EXIT:
            return dict(out, status="caught", detail=f"{out['errors']} errors")
        return dict(out, status="FAILED", detail=f"{out['errors']} errors, exit {rc}: not caught")
    if out["errors"] == 0 and rc == 0:
        return dict(out, status="clean", detail="0 errors")
    return dict(out, status="FAILED", detail=f"{out['errors']} errors, exit {rc}")


# ---- tables ----


def _chain_rows_not_run(rc: int, timed_out: bool, res: list) -> str:
    """Why a chain check's rows cannot be judged ('' when they all ran): a timeout, no rows
    (the check did not run), or a row with error text."""
    if timed_out:
        return "timed out"
    if not res:
        return f"exit {rc}, no check rows (the check did not run)"
    errs = [x["error"] for x in res if x.get("error")]
    return f"exit {rc}, a row did not run: {errs[0][:120]}" if errs else ""


def judge_chain_check(rc: int, timed_out: bool, doc: dict) -> tuple[bool, str]:
    """A chain package's `rowfuse check --json`: ok only with exit 0 and a JSON with at
    least one row, every row run and passed. Returns (ok, why not)."""
    res = doc.get("results") or []
    why = _chain_rows_not_run(rc, timed_out, res)
    if why:
        return False, why
    failed = [x for x in res if x.get("passed") is not True]
    if failed or rc != 0:
        return False, f"exit {rc}, {len(failed)} of {len(res)} rows FAILED"
    return True, ""


def judge_chain_fault(rc: int, timed_out: bool, doc: dict) -> tuple[bool, str]:
    """A planted fault in a chain package is caught only when its check ran and reported
    FAIL: exit 1, a JSON whose rows all ran (no error text) and one of them not passed. A
    check that could not run (no JSON, a load error, a refusal that exits 1 with no rows)
    is not a catch. Returns (caught, why not)."""
    res = doc.get("results") or []
    why = _chain_rows_not_run(rc, timed_out, res)
    if why:
        return False, why
    if rc != 1 or all(x.get("passed") is True for x in res):
        return False, f"exit {rc}, every row passed: the fault went through"
    return True, ""


def check_summary(rows: list[dict]) -> dict:
    """Per variant: shapes, passed, worst errors, the failing shapes."""
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r)
    out = {}
    for v, rs in by.items():
        ran = [r for r in rs if not r.get("error")]
        out[v] = {
            "shapes": len(rs),
            "passed": sum(1 for r in rs if r.get("passed")),
            "max_abs_error": max((r.get("max_abs_error") or 0.0 for r in ran), default=None),
            "max_rel_l2": max((r.get("rel_l2_error") or 0.0 for r in ran), default=None),
            "max_allow_ratio": max((r.get("max_allow_ratio") or 0.0 for r in ran), default=None),
            "failures": [
                f"{r['rows']}x{r['channels']}x{r['hidden']}"
                + (f" ({r['error'][:80]})" if r.get("error") else "")
                for r in rs
                if not r.get("passed")
            ],
        }
    return out


def _g(x, fmt="{:.2e}"):
    return "-" if x is None else fmt.format(x)


def check_table(per_variant: dict) -> str:
    lines = [
        f"{'variant':<17}{'shapes':>7}{'passed':>7}{'max abs':>10}{'rel L2':>10}{'allow':>7}"
        "  failures"
    ]
    for v, s in per_variant.items():
        lines.append(
            f"{v:<17}{s['shapes']:>7}{s['passed']:>7}{_g(s['max_abs_error']):>10}"
            f"{_g(s['max_rel_l2']):>10}{_g(s['max_allow_ratio'], '{:.2f}'):>7}  "
            + " ".join(s["failures"][:4])
        )
    return "\n".join(lines)


_SHORT = {
    "caught": "C",
    "not caught": "n",
    "inert": "i",
    "refused": "R",
    "refused by CUDA": "r",
    "error": "E",
    "FAILED": "F",
    "fail, not refused": "F",
    "control FAILED": "F",
}


def gates_table(g: dict) -> str:
    """fault x schedule x shape class, one letter per shape: C caught, R refused (capture
    faults; r by CUDA itself), i inert (the geometry shows why), n not caught, E error,
    F FAILED; '.' where the fault does not
    touch the schedule there or the package lacks it. Then the sanitizer table."""
    classes = list(dict.fromkeys(s["class"] for s in g.get("shapes", [])))
    scheds = list(dict.fromkeys(c["schedule"] for c in g.get("cells", [])))
    lines = ["planted faults (C caught, R/r refused, i inert, n NOT caught, E error, F FAILED):"]
    lines.append(f"{'fault':<24}{'schedule':<17}" + "".join(f"{c:>9}" for c in classes))
    for f in g.get("faults", []):
        for sched in scheds:
            cells = [
                c for c in g.get("cells", []) if c["fault"] == f["name"] and c["schedule"] == sched
            ]
            if not cells:
                continue
            row = ""
            for cls in classes:
                mine = [c for c in cells if c["class"] == cls]
                row += f"{''.join(_SHORT.get(c['status'], '.') for c in mine) or '.':>9}"
            lines.append(f"{f['name']:<24}{sched:<17}{row}")
    bench = g.get("bench_refusals") or []
    if bench:
        ok = sum(1 for b in bench if b["status"].startswith("refused"))
        lines.append(f"rowfuse bench --c refused {ok} of {len(bench)} capture-fault variants")
        for b in bench[:3]:
            lines.append(f"  {b['fault']} {b['schedule']} {b['shape']}: {b['detail'][:110]}")
    san = g.get("sanitizer") or []
    if san:
        tools = list(dict.fromkeys(s["tool"] for s in san))
        keys = list(dict.fromkeys((s["shape"], s["schedule"]) for s in san))
        lines.append("compute-sanitizer (errors, or FAILED; seconds of the slowest):")
        lines.append(f"{'shape':<22}{'schedule':<17}" + "".join(f"{t:>11}" for t in tools))
        for shape, sched in keys:
            row = ""
            for t in tools:
                hit = [
                    s
                    for s in san
                    if s["shape"] == shape and s["schedule"] == sched and s["tool"] == t
                ]
                if not hit:
                    row += f"{'-':>11}"
                    continue
                s = hit[0]
                cell = (
                    f"{s['errors']}e/{s['seconds']}s"
                    if s["status"] in ("clean", "caught")
                    else "FAILED"
                )
                row += f"{cell:>11}"
            lines.append(f"{shape[:21]:<22}{sched[:16]:<17}{row}")
    return "\n".join(lines)


def steps_table(steps: list[dict]) -> str:
    lines = [f"{'sub':<8}{'step':<40}{'status':<8}{'s':>6}  detail"]
    for s in steps:
        lines.append(
            f"{s['sub']:<8}{s['step'][:39]:<40}{s['status']:<8}{s['seconds']:>6.0f}  "
            f"{(s.get('detail') or '')[:100]}"
        )
    return "\n".join(lines)


def print_summary(summary: dict) -> int:
    """The tables of a run's summary.json, the steps table and the RESULT line last;
    returns the exit status: 1 when any step FAILED or none ran."""
    subs = summary.get("subs", {})
    if "check" in subs and subs["check"].get("per_variant"):
        print("== check: rowfuse check, every package and shape")
        print(check_table(subs["check"]["per_variant"]))
    if "gates" in subs:
        print("== gates")
        print(gates_table(subs["gates"]))
        nc = subs["gates"].get("not_caught", [])
        if nc:
            print(f"{len(nc)} fault cells NOT caught and not shown inert (holes in the check):")
            print("  " + ", ".join(nc[:12]))
    for name, s in subs.items():
        if s.get("table"):
            print(f"== {name}")
            print(s["table"])
    steps = summary.get("steps", [])
    print("== steps")
    print(steps_table(steps))
    failed = [s for s in steps if s["status"] == "FAILED"]
    ok = bool(steps) and not failed
    print(
        f"RESULT: {'PASS' if ok else 'FAIL'}  {len(steps) - len(failed)} of {len(steps)} steps ok"
        f"  ({', '.join(summary.get('ran', []))})"
    )
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        return print_summary(json.load(f))


if __name__ == "__main__":
    sys.exit(main())
