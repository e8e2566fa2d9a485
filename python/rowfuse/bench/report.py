"""Merge benchmark runs into a report: JSON, markdown tables and a plot.

    python -m rowfuse.bench.report run1.json run2.json -o report/

Reads JSON written by `python -m rowfuse.bench` or `rowfuse bench --c` (schema
rowfuse-bench/1), validates it, and writes under the output folder:
  report.json  every run merged (git revision, GPU, driver, clocks, seed, shapes, summaries)
  report.md    one table per run and shape (medians with p10/p90), then a span summary
  report.png / report.svg  GPU span and event interval per variant across shapes
Needs no GPU and no torch; matplotlib only for the plot.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys

from rowfuse.bench import roofline
from rowfuse.capi import names

SCHEMA = "rowfuse-bench/1"
REPORT_SCHEMA = "rowfuse-report/1"
# the floor, the C table's schedules (rowfuse/plan.h), then the Python host's peers
ORDER = ["empty", *names.SCHEDULES, "torch-eager", "torch-compile", "triton-fused", "xla"]
_SUMMARY_KEYS = ("count", "median", "p10", "p90")


class ReportError(ValueError):
    """A run file that does not follow the schema; the message says where."""


def _need(obj, key, where):
    if not isinstance(obj, dict) or key not in obj:
        raise ReportError(f"{where}: missing '{key}'")
    return obj[key]


def _check_summary(s, where):
    if s is None:
        return
    for k in _SUMMARY_KEYS:
        v = _need(s, k, where)
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ReportError(f"{where}.{k}: expected a finite number, got {v!r}")
    if not s["p10"] <= s["median"] <= s["p90"]:
        raise ReportError(f"{where}: quantiles out of order (p10 <= median <= p90 broken)")


def validate(doc: dict, where: str = "run") -> dict:
    """Raises ReportError naming the first field that breaks the schema; returns doc."""
    if _need(doc, "schema", where) != SCHEMA:
        raise ReportError(f"{where}: schema is {doc['schema']!r}, expected {SCHEMA!r}")
    for key in ("tool", "date", "git_revision", "seed", "gpu", "method"):
        _need(doc, key, where)
    _need(doc["gpu"], "name", f"{where}.gpu")
    runs = _need(doc, "runs", where)
    if not isinstance(runs, list):
        raise ReportError(f"{where}.runs: expected a list")
    for i, run in enumerate(runs):
        w = f"{where}.runs[{i}]"
        shape = _need(run, "shape", w)
        for k in ("rows", "channels", "hidden"):
            if not isinstance(_need(shape, k, f"{w}.shape"), int) or shape[k] < 1:
                raise ReportError(f"{w}.shape.{k}: expected a positive integer")
        for j, v in enumerate(_need(run, "variants", w)):
            wv = f"{w}.variants[{j}]"
            _need(v, "name", wv)
            if "error" in v:
                continue
            for mode in ("graph", "eager"):
                m = _need(v, mode, wv)
                for key in ("event_us", "host_us"):
                    _check_summary(_need(m, key, f"{wv}.{mode}"), f"{wv}.{mode}.{key}")
            for key in ("b2b_us", "span_us", "event_us_no_cupti", "host_us_no_cupti"):
                _check_summary(v["graph"].get(key), f"{wv}.graph.{key}")
    return doc


def load(paths) -> list[dict]:
    docs = []
    for p in paths:
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ReportError(f"{p}: cannot read JSON: {e}") from e
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise ReportError(
                f"{p}: not a benchmark run (want the JSON of `rowfuse bench --c` or "
                f"`python -m rowfuse.bench`, schema {SCHEMA})"
            )
        try:
            docs.append(validate(doc, p))
        except (TypeError, AttributeError, KeyError) as e:
            raise ReportError(f"{p}: does not follow the {SCHEMA} schema ({e!r})") from e
    return docs


def shape_tag(shape: dict) -> str:
    return f"{shape['rows']}x{shape['channels']}x{shape['hidden']}"


def _fmt(s, digits: int = 2) -> str:
    if not s:
        return "-"
    return f"{s['median']:.{digits}f} us [{s['p10']:.{digits}f}, {s['p90']:.{digits}f}]"


def span_method(doc) -> str:
    """How the run took its GPU span (method.span_source; runs before the field existed
    took it over separate replays)."""
    m = doc.get("method", {})
    src = m.get("span_source", "separate-replays")
    if src == "timed-observations":
        n = m.get("rounds", 0) * m.get("observations", 0)
        ctl = m.get("control_observations", 0)
        return (
            f"GPU span over the {n} timed graph observations (CUPTI on while timing, "
            f"{m.get('span_attribution', 'correlation')} attribution"
            + (f"; control round of {ctl} without CUPTI" if ctl else "")
            + ")"
        )
    if src == "none":
        return "no GPU span (CUPTI off)"
    return f"GPU span over {m.get('span_replays', '?')} separate replays (CUPTI off while timing)"


def foreign_notes(run) -> list[str]:
    """What differs for a variant that is not a graph replay of ours (XLA): where its span
    came from, why it has no event interval, how it was checked."""
    out = []
    for v in run["variants"]:
        g = v.get("graph") or {}
        if v["name"] != "xla" or "error" in v:
            continue
        rule = g.get("span_attribution") or "order"
        out.append(
            f"- {v.get('label', v['name'])}: JAX launches on its own stream, so no graph of "
            f"ours and no CUDA events around it (event interval and back-to-back '-'); its "
            f"GPU span is from the CUPTI records of the same interleaved observations that "
            f"are not our graph replays ({rule} attribution, {v.get('kernels', '?')} "
            f"kernel(s) per call); its output was checked as returned (nothing to poison)."
        )
    return out


def _sorted_variants(variants):
    rank = {n: i for i, n in enumerate(ORDER)}
    return sorted(variants, key=lambda v: rank.get(v["name"], len(ORDER)))


def render_markdown(docs) -> str:
    lines = ["# rowfuse benchmark report", ""]
    lines.append(
        "Medians with [p10, p90]. Event interval and host completion per graph replay "
        "(or eager launch), one synchronize per observation; GPU span of one replay from "
        "CUPTI (first kernel start to last kernel end); back-to-back = N replays between "
        "two events / N. Check: rel. L2 error vs the CPU reference in the plan's mixed "
        "precision (H rounded to fp16) after a poisoned "
        "replay."
    )
    lines.append("")
    for doc in docs:
        gpu = doc["gpu"]
        m = doc["method"]
        driver = gpu.get("driver") or gpu.get("clocks_before", {}).get("driver", "?")
        head = (
            f"{doc['tool']} host, {gpu.get('name', '?')}, driver {driver}, "
            f"git {str(doc['git_revision'])[:12]}, {doc['date']}, seed {doc['seed']}, "
            f"{m.get('rounds', '?')} rounds x {m.get('observations', '?')} observations; "
            f"{span_method(doc)}"
        )
        for run in doc["runs"]:
            lines.append(f"## {shape_tag(run['shape'])} (rows x channels x hidden)")
            lines.append("")
            lines.append(head)
            lines.append("")
            lines.append(
                "| variant | kernels | GPU span | event interval | host completion "
                "| back-to-back | eager event | eager host | rel. L2 |"
            )
            lines.append("|---|---|---|---|---|---|---|---|---|")
            notes = []
            for v in _sorted_variants(run["variants"]):
                label = v.get("label", v["name"])
                if "error" in v:
                    lines.append(f"| {label} | - | - | - | - | - | - | - | - |")
                    notes.append(f"- {label}: {v['error']}")
                    continue
                g, e = v["graph"], v["eager"]
                chk = v.get("check", {})
                err = chk.get("rel_l2")
                lines.append(
                    f"| {label} | {v.get('kernels', '-')} | {_fmt(g.get('span_us'))} "
                    f"| {_fmt(g['event_us'])} | {_fmt(g['host_us'])} | {_fmt(g.get('b2b_us'))} "
                    f"| {_fmt(e['event_us'])} | {_fmt(e['host_us'])} "
                    f"| {'-' if err is None else f'{err:.1e}'} |"
                )
            lines.append("")
            foreign = foreign_notes(run)
            if foreign:
                lines.extend(foreign)
                lines.append("")
            if notes:
                lines.append("Not measured:")
                lines.extend(notes)
                lines.append("")
    lines.extend(render_span_summary(docs))
    lines.extend(render_cupti_effect(docs))
    lines.extend(render_roofline(docs))
    lines.extend(render_comparison(docs))
    lines.extend(render_scheduler(docs))
    lines.extend(render_tuning(docs))
    return "\n".join(lines) + "\n"


def render_span_summary(docs) -> list[str]:
    """One row per (tool, shape): median GPU span of every variant, in us."""
    present = {v["name"] for d in docs for r in d["runs"] for v in r["variants"]}
    names = [n for n in ORDER if n in present]
    if not names:
        return []
    out = ["## GPU span summary (median us)", ""]
    out.append("| host | shape | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for doc in docs:
        for run in doc["runs"]:
            by = {v["name"]: v for v in run["variants"]}
            cells = []
            for n in names:
                v = by.get(n, {})
                s = None if "error" in v else v.get("graph", {}).get("span_us")
                cells.append("-" if not s else f"{s['median']:.2f}")
            tag = shape_tag(run["shape"])
            out.append(f"| {doc['tool']} | {tag} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def render_cupti_effect(docs) -> list[str]:
    """Per (host, shape, variant) with a control round: event interval and host completion
    medians with CUPTI recording and without, and their ratio (CUPTI's cost to the host
    figures; a ratio near 1 means the span came free)."""
    rows = []
    for doc in docs:
        for run in doc["runs"]:
            for v in _sorted_variants(run["variants"]):
                g = v.get("graph", {}) if "error" not in v else {}
                if not g.get("host_us_no_cupti"):
                    continue
                ho, ho0 = g["host_us"]["median"], g["host_us_no_cupti"]["median"]
                event = "-"
                if g.get("event_us") and g.get("event_us_no_cupti"):
                    ev, ev0 = g["event_us"]["median"], g["event_us_no_cupti"]["median"]
                    event = f"{ev:.2f} / {ev0:.2f} us ({ev / ev0:.3f}x)"
                rows.append(
                    f"| {doc['tool']} | {shape_tag(run['shape'])} | {v['name']} "
                    f"| {event} | {ho:.2f} / {ho0:.2f} us ({ho / ho0:.3f}x) |"
                )
    if not rows:
        return []
    return [
        "## CUPTI's effect on the host figures (with / without CUPTI, medians)",
        "",
        "| host | shape | variant | event interval | host completion |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]


def render_roofline(docs, target: roofline.Target = roofline.H200) -> list[str]:
    """Per (host, shape) of the C host: the roofline of the plan's schedule (and of the
    fastest variant measured) counting where its working set lives (rowfuse.bench.roofline)."""
    rows = []
    for doc in docs:
        ceil = doc.get("ceilings") or {}
        measured = target
        if ceil.get("bandwidth_gbs", 0) > 0 and ceil.get("tflops", 0) > 0:
            # the ceilings bench --c measured on the device in the same run (ceilings.c)
            measured = dataclasses.replace(
                target,
                hbm_bytes_per_s=ceil["bandwidth_gbs"] * 1e9,
                flops_per_s=ceil["tflops"] * 1e12,
            )
        for run in doc["runs"]:
            choice = run.get("plan", {}).get("schedule")
            sh = run["shape"]
            spans = {
                v["name"]: _median(v, "graph", "span_us")
                for v in run["variants"]
                if v["name"] != "empty" and _median(v, "graph", "span_us") is not None
            }
            if not choice or choice not in spans:
                continue
            b = roofline.bound(sh["rows"], sh["channels"], sh["hidden"], choice, measured)
            best = min(spans, key=spans.get)
            bb = roofline.bound(sh["rows"], sh["channels"], sh["hidden"], best, measured)
            rows.append(
                f"| {shape_tag(sh)} | {b['working_set'] / 1e6:.2f} MB, {b['where']} "
                f"| {b['flop_us']:.2f} | {b['hbm_us']:.2f} | {b['l2_us']:.2f} "
                f"| {choice}: {b['roofline_us']:.2f} ({b['limit']}), "
                f"{spans[choice]:.2f} measured, {100 * b['roofline_us'] / spans[choice]:.0f}% "
                f"| {best}: {100 * bb['roofline_us'] / spans[best]:.0f}% |"
            )
    if not rows:
        return []
    return [
        f"## Roofline, L2-aware ({target.name}; us per replay)",
        "",
        f"Bytes: X fp16, W1/W2 fp16, biases fp32, Y fp32, and H fp16 written and read for "
        f"schedules that pass it through global memory. A working set under half the "
        f"{target.l2_bytes / 1e6:.0f} MB L2 stays resident across the bench's replays, so its "
        f"memory bound is bytes / L2 rate ({target.l2_bytes_per_s / 1e12:.0f} TB/s, assumed); "
        f"between half and all of the L2 both bounds are shown and the L2 one is used (a "
        f"roofline must be unbeatable); above it, bytes / HBM rate "
        f"({target.hbm_bytes_per_s / 1e12:.1f} TB/s). FLOP bound at "
        f"{target.flops_per_s / 1e12:.0f} TFLOP/s. Where a C run measured its ceilings (a 1 GiB "
        f"device copy and a cuBLASLt fp16 8192^3 GEMM, in the JSON's 'ceilings'), its rows use "
        f"those instead of the HBM and FLOP rates above. % = roofline / measured span.",
        "",
        "| shape | working set | FLOP bound | HBM bound | L2 bound | roofline of the choice "
        "| fastest variant |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _median(v, mode, metric):
    if not v or "error" in v:
        return None
    s = v.get(mode, {}).get(metric)
    return s["median"] if s else None


def span_median(v, mode: str = "graph"):
    """The median GPU span of a variant's graph replays (mode "graph_cold": those timed
    with a cold L2); None when it failed or has none."""
    return _median(v, mode, "span_us")


def _tie(a, b, metric="span_us") -> bool:
    """Two variants' medians are a tie when their bootstrap 95% intervals overlap
    (docs/benchmarking.md); runs without intervals never tie."""
    sa, sb = (v.get("graph", {}).get(metric) or {} for v in (a or {}, b or {}))
    keys = ("median_ci_lo", "median_ci_hi")
    if not all(k in s for k in keys for s in (sa, sb)):
        return False
    return sa["median_ci_lo"] <= sb["median_ci_hi"] and sb["median_ci_lo"] <= sa["median_ci_hi"]


def render_comparison(docs, subject: str = names.SCHEDULES[0]) -> list[str]:
    """persistent-smem's GPU span over each peer's, per (host, shape), and the targets of
    docs/benchmarking.md at 49x48x96; a ratio above 1 means rowfuse loses."""
    out = [f"## {subject}: GPU span relative to each peer (ratio < 1: {subject} faster)", ""]
    rows = []
    for doc in docs:
        for run in doc["runs"]:
            by = {v["name"]: v for v in run["variants"]}
            mine = _median(by.get(subject), "graph", "span_us")
            tag = shape_tag(run["shape"])
            if mine is None:
                why = by.get(subject, {}).get("error", "not in this run")
                rows.append(f"| {doc['tool']} | {tag} | not measured: {why} |")
                continue
            cells = []
            for n in ORDER:
                other = _median(by.get(n), "graph", "span_us")
                if n in (subject, "empty") or other is None:
                    continue
                verdict = " (tie)" if _tie(by.get(subject), by.get(n)) else ""
                if not verdict and mine > other:
                    verdict = " (loses)"
                cells.append(f"{n} {mine / other:.2f}x{verdict}")
            rows.append(f"| {doc['tool']} | {tag} | {mine:.2f} us; " + "; ".join(cells) + " |")
    if not rows:
        return []
    out += ["| host | shape | span; ratio to each peer |", "|---|---|---|"] + rows + [""]
    out += ["Targets (docs/benchmarking.md) at 49x48x96:", ""]
    for doc in docs:
        for run in doc["runs"]:
            if shape_tag(run["shape"]) != "49x48x96":
                continue
            by = {v["name"]: v for v in run["variants"]}
            span = _median(by.get(subject), "graph", "span_us")
            checks = []
            if span is not None:
                checks.append(("span <= 2.0 us", span, 2.0))
                tri = _median(by.get("triton-fused"), "graph", "span_us")
                if tri:
                    checks.append(("span <= 0.8x Triton fused", span / tri, 0.8))
                tc = _median(by.get("torch-compile"), "graph", "span_us")
                if tc:
                    checks.append(("span <= 0.35x torch.compile", span / tc, 0.35))
            if doc["tool"] == "c":
                ev = _median(by.get(subject), "graph", "event_us")
                host = _median(by.get(subject), "graph", "host_us")
                if ev is not None:
                    checks.append(("C event interval <= 5.0 us", ev, 5.0))
                if host is not None:
                    checks.append(("C host completion <= 11 us", host, 11.0))
            for name, val, lim in checks:
                verdict = "met" if val <= lim else f"MISSED by {val / lim:.2f}x"
                out.append(f"- {doc['tool']} host: {name}: {val:.3g} ({verdict})")
            if not checks:
                out.append(f"- {doc['tool']} host: {subject} not measured")
    out.append("")
    return out


def render_scheduler(docs) -> list[str]:
    """Per shape: the schedule the package's plan chose (recorded by `rowfuse bench --c`
    from plan.json), its GPU span, and the best GPU span measured among every variant of
    every host at that shape (GPU spans do not depend on the host)."""
    out = ["## Scheduler (the plan's choice) against the best variant measured", ""]
    shapes = {}
    for doc in docs:
        for run in doc["runs"]:
            entry = shapes.setdefault(shape_tag(run["shape"]), {"choice": None, "spans": {}})
            if run.get("plan", {}).get("schedule"):
                entry["choice"] = run["plan"]["schedule"]
            for v in run["variants"]:
                t = _median(v, "graph", "span_us")
                if v["name"] != "empty" and t is not None:
                    entry["spans"][v["name"]] = t
    if not any(e["choice"] for e in shapes.values()):
        return out + ["No run records a plan (C runs do): scheduler not evaluated.", ""]
    out += ["| shape | choice | its span | best measured | verdict |", "|---|---|---|---|---|"]
    for tag, e in shapes.items():
        choice, spans = e["choice"], e["spans"]
        mine = spans.get(choice)
        if choice is None or mine is None:
            out.append(f"| {tag} | {choice or '-'} | - | - | not measured |")
            continue
        best = min(spans, key=spans.get)
        verdict = "best" if mine <= spans[best] else f"loses to {best} by {mine / spans[best]:.2f}x"
        out.append(
            f"| {tag} | {choice} | {mine:.2f} us | {best} {spans[best]:.2f} us | {verdict} |"
        )
    out.append("")
    return out


def _tuning_line(v) -> str | None:
    """One line on how a peer was tuned: Triton's chosen configuration and metric,
    torch.compile's candidates (or, in older runs, its two compiles), XLA's settings,
    cuBLASLt's note; None for a variant with nothing to say."""
    t = v.get("tuning")
    if v["name"] == "triton-fused" and isinstance(t, dict) and "chosen_label" in t:
        dflt = t.get("default_us")
        metric = t.get("metric", "graph interval of back-to-back launches")
        return (
            f"{t['chosen_label']} {t['chosen_us']:.2f} us, fastest of {t['timed']} timed "
            f"({t['space']} in the space, {len(t.get('failed', []))} failed"
            + (f"; untuned default {dflt:.2f} us" if dflt is not None else "")
            + f"; {t.get('tune_s', '?')} s; by {metric})"
        )
    if v["name"] == "torch-compile" and isinstance(t, dict) and "candidates" in t:
        parts = []
        for r in t["candidates"]:
            if "span_us" in r:
                what = f"{r['span_us']:.2f} us"
            else:
                what = r.get("error") or r.get("skipped") or "not timed"
                what = what if len(what) <= 90 else what[:87] + "..."  # the JSON has it all
            compile_s = f"{r['compile_s']} s, " if "compile_s" in r else ""
            parts.append(f"{r['name']} ({compile_s}{what})")
        kept = f"; kept {t['chosen_name']}" if "chosen_name" in t else "; none kept"
        return (
            f"{t.get('mode', '?')}, candidates by {t.get('metric', 'GPU span')}: "
            + ", ".join(parts)
            + kept
        )
    if v["name"] == "torch-compile" and isinstance(t, dict) and "compiles" in t:
        runs = ", ".join(
            f"#{i + 1}: {r['compile_s']} s, "
            + (f"{r['graph_us']:.2f} us/call" if "graph_us" in r else r.get("error", "failed"))
            for i, r in enumerate(t["compiles"])
        )
        kept = f"; kept #{t['chosen'] + 1}" if "chosen" in t else ""
        spread = f", spread {t['spread']}" if t.get("spread") else ""
        return f"{t.get('mode', '?')}: {runs}{kept}{spread}"
    if v["name"] == "xla" and isinstance(t, dict) and "jax" in t:
        return (
            f"jax {t['jax']}, compile-time GEMM autotuning, XLA_FLAGS "
            f"{t.get('xla_flags', '(none)')}; compiled in {t.get('compile_s', '?')} s, "
            f"{t.get('kernels', '?')} kernel(s) per call"
        )
    if v["name"] == "cublaslt" and v.get("note"):
        return v["note"]
    return None


def render_tuning(docs) -> list[str]:
    """How each tuned peer was tuned, per shape (the runs' "tuning" fields and notes)."""
    out = []
    for doc in docs:
        for run in doc["runs"]:
            for v in _sorted_variants(run["variants"]):
                line = _tuning_line(v)
                if line:
                    out.append(f"- {shape_tag(run['shape'])}, {v.get('label', v['name'])}: {line}")
    if not out:
        return []
    return ["## Peer tuning", "", *out, ""]


def series(docs, metric: str):
    """{(tool, variant): [(shape_tag, summary)]} for metric 'span_us' or 'event_us'."""
    out = {}
    for doc in docs:
        for run in doc["runs"]:
            for v in run["variants"]:
                if "error" in v:
                    continue
                s = v["graph"].get(metric)
                if s:
                    key = (doc["tool"], v["name"])
                    out.setdefault(key, []).append((shape_tag(run["shape"]), s))
    return out


def plot(docs, out_dir: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = []
    for doc in docs:
        for run in doc["runs"]:
            t = shape_tag(run["shape"])
            if t not in tags:
                tags.append(t)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharex=True)
    for ax, metric, title in (
        (axes[0], "span_us", "GPU span of one replay (CUPTI)"),
        (axes[1], "event_us", "CUDA-event interval per replay"),
    ):
        for (tool, name), pts in sorted(series(docs, metric).items()):
            xs = [tags.index(t) for t, _ in pts]
            med = [s["median"] for _, s in pts]
            lo = [s["median"] - s["p10"] for _, s in pts]
            hi = [s["p90"] - s["median"] for _, s in pts]
            style = "--" if tool == "c" else "-"
            label = f"{name} ({tool})"
            ax.errorbar(xs, med, yerr=[lo, hi], fmt="o" + style, capsize=3, label=label)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_ylabel("us (median, p10-p90)")
        ax.set_xticks(range(len(tags)))
        ax.set_xticklabels(tags, rotation=30, ha="right")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7, loc="upper left")
    fig.suptitle("rowfuse residual MLP block: rows x channels x hidden")
    fig.tight_layout()
    paths = [os.path.join(out_dir, "report.png"), os.path.join(out_dir, "report.svg")]
    for p in paths:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return paths


def write_report(docs, out_dir: str, with_plot: bool = True) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    merged = {"schema": REPORT_SCHEMA, "runs": docs}
    jpath = os.path.join(out_dir, "report.json")
    with open(jpath, "w") as f:
        json.dump(merged, f, indent=1)
    mpath = os.path.join(out_dir, "report.md")
    with open(mpath, "w") as f:
        f.write(render_markdown(docs))
    written = [jpath, mpath]
    if with_plot:
        written += plot(docs, out_dir)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m rowfuse.bench.report", description=__doc__.split("\n")[0]
    )
    p.add_argument("runs", nargs="+", help="JSON files from rowfuse.bench / rowfuse bench --c")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--no-plot", action="store_true", help="skip the matplotlib plot")
    args = p.parse_args(argv)
    try:
        docs = load(args.runs)
    except ReportError as e:
        print(f"rowfuse.bench.report: {e}", file=sys.stderr)
        return 2
    for path in write_report(docs, args.output, with_plot=not args.no_plot):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
