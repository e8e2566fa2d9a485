"""The lab report: merges runs of rowfuse.lab.gpu (e.g. one with IREE's stream command
buffers and PyTorch, one with IREE's CUDA graphs) into JSON, markdown and a plot.

    python -m rowfuse.lab.report RUN.json... -o DIR [--no-plot]

Per model: each variant's check (relative L2 against PyTorch fp64), kernels per call and
GPU span (CUPTI), host completion and CUDA-event interval (medians, p10-p90), and what
IREE made of the model (torch ops -> dispatches, each dispatch's fused ops). Writes
DIR/report.{json,md,png} and prints the short table last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

SCHEMA = "rowfuse-lab-report/1"
ORDER = [
    "iree-streams",
    "iree-graphs",
    "torch-eager",
    "torch-eager-graph",
    "torch-compile",
    "torch-compile-graph",
]


def merge(runs: list[dict]) -> dict:
    models: dict = {}
    for run in runs:
        if run.get("schema") != "rowfuse-lab-run/1":
            raise ValueError(f"not a lab run (schema {run.get('schema')!r})")
        for name, m in run["models"].items():
            dst = models.setdefault(name, {"variants": {}})
            for key in ("input_shape", "torch_ops", "dispatch_summary", "cuda_target", "error"):
                if key in m and key not in dst:
                    dst[key] = m[key]
            for v, res in m.get("variants", {}).items():
                dst["variants"][v] = {**res, "seed": m.get("seed"), "mode": run["env"]["iree_mode"]}
    for m in models.values():
        m["variants"] = dict(sorted(m["variants"].items(), key=lambda kv: (_rank(kv[0]), kv[0])))
    return {"schema": SCHEMA, "runs": [r["env"] for r in runs], "models": models}


def _rank(name: str) -> int:
    return ORDER.index(name) if name in ORDER else len(ORDER)


def _med(stats) -> str:
    return f"{stats['median']:.2f}" if stats else "-"


def _range(stats) -> str:
    return f"{stats['p10']:.2f}-{stats['p90']:.2f}" if stats else "-"


def _check(res) -> str:
    if "error" in res:
        return "FAILED: " + res["error"][:80]
    c = res.get("check")
    if not c:
        return "-"
    return f"{c['rel_l2_vs_torch_fp64']:.1e} {'ok' if c['ok'] else 'MISMATCH'}"


def rows(report: dict) -> list[list[str]]:
    out = []
    for name, m in report["models"].items():
        for v, res in m["variants"].items():
            out.append(
                [
                    name,
                    res.get("label", v),
                    str(res.get("kernels", "-")),
                    _check(res),
                    _med(res.get("span_us")),
                    _med(res.get("host_us")),
                    _med(res.get("event_us")),
                ]
            )
    return out


HEADER = ["model", "variant", "kernels", "rel L2 vs fp64", "GPU span us", "host us", "event us"]


def table(rows_: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows_]
    return "\n".join(lines)


def markdown(report: dict) -> str:
    md = ["# Lab: IREE vs PyTorch", ""]
    for env in report["runs"]:
        md.append(
            f"- run {env.get('date')}: {env.get('gpu', env.get('device'))} "
            f"({env.get('capability', '')}), IREE runtime {env.get('iree_runtime')} "
            f"({env.get('iree_mode')}), torch {env.get('torch')}, git {env.get('git', '')[:12]}"
        )
    md += [
        "",
        "Medians; host completion and event interval over every observation, GPU span",
        "and kernels per call from CUPTI. The check is against PyTorch fp64 on the CPU.",
        "",
    ]
    for name, m in report["models"].items():
        md += [f"## {name}", ""]
        if "error" in m:
            md += [f"not run: {m['error']}", ""]
            continue
        s = m.get("dispatch_summary", {}).get("cuda")
        if s:
            md.append(
                f"Input {m.get('input_shape')}: {m.get('torch_ops')} torch ops -> "
                f"{s['dispatches']} IREE dispatches ({len(s['executables'])} distinct "
                f"executables), {s['launches']} launches per call (target "
                f"{m.get('cuda_target')})."
            )
            md.append("")
        md += [
            "| variant | kernels | rel L2 vs fp64 | GPU span us | host us (p10-p90) | event us |",
            "|---|---|---|---|---|---|",
        ]
        for v, res in m["variants"].items():
            md.append(
                f"| {res.get('label', v)} | {res.get('kernels', '-')} | {_check(res)} | "
                f"{_med(res.get('span_us'))} | {_med(res.get('host_us'))} "
                f"({_range(res.get('host_us'))}) | {_med(res.get('event_us'))} |"
            )
        if s:
            md += ["", "What IREE fused (one line per executable):", ""]
            md += [f"- `{e['name']}`: {' + '.join(e['ops'])}" for e in s["executables"]]
        md.append("")
    return "\n".join(md)


def plot(report: dict, path: str) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no plot: {e}"
    names = list(report["models"])
    variants = sorted({v for m in report["models"].values() for v in m["variants"]}, key=_rank)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(variants), 1)
    panels = ((axes[0], "host_us", "host completion"), (axes[1], "span_us", "GPU span"))
    for ax, key, title in panels:
        measured = False
        for j, v in enumerate(variants):
            ys = []
            for n in names:
                st = report["models"][n]["variants"].get(v, {}).get(key)
                ys.append(st["median"] if st else float("nan"))  # not measured: no bar
                measured = measured or bool(st)
            ax.bar([i + j * width for i in range(len(names))], ys, width, label=v)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
        if measured:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
        ax.set_ylabel("us (median, log scale)")
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rowfuse.lab.report")
    p.add_argument("runs", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    runs = []
    for path in args.runs:
        with open(path) as f:
            runs.append(json.load(f))
    report = merge(runs)
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.output, "report.md"), "w") as f:
        f.write(markdown(report))
    if not args.no_plot:
        try:
            note = plot(report, os.path.join(args.output, "report.png"))
        except Exception as e:  # the tables matter more than the picture
            note = f"no plot: {type(e).__name__}: {e}"
        if note:
            print(note)
    print(table(rows(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
