"""python -m rowfuse.lab MODEL -o DIR [--targets llvm-cpu,cuda] [--cuda-target sm_89]
[--no-check]

Exports MODEL with torch.export, imports it through iree-turbine, compiles it with
iree-compile for each target phase by phase, keeps every stage's output in DIR with an
index (index.json; `rowfuse inspect DIR` lists it), and runs the llvm-cpu module against
PyTorch on fresh random inputs. Exit status: 0 ok, 1 the CPU module does not match
PyTorch, 2 bad arguments, a failed stage or a missing artifact.
"""

from __future__ import annotations

import argparse
import collections
import sys

from . import artifacts, build, models, stages


def _print_summary(index: dict) -> None:
    stages_seen = collections.Counter(a["stage"] for a in index["artifacts"])
    total = sum(a["bytes"] for a in index["artifacts"])
    print(f"{index['model']}: {len(index['artifacts'])} artifacts, {total} bytes")
    for stage, n in sorted(stages_seen.items()):
        print(f"  {stage:28s} {n:4d}")
    for t, s in index["dispatch_summary"].items():
        print(
            f"  {t}: {index['torch_ops']} torch ops -> {s['dispatches']} dispatches, "
            f"{s['launches']} launches per call"
        )
        for e in s["executables"]:
            print(f"    {e['name']}: {' + '.join(e['ops'])}")
    c = index.get("check")
    if c:
        worst = max(r["rel_l2_vs_torch_fp64"] for r in c["runs"])
        worst32 = max(r["rel_l2_vs_torch_fp32"] for r in c["runs"])
        verdict = "ok" if c["ok"] else "MISMATCH"
        print(
            f"  llvm-cpu vs PyTorch: rel L2 {worst:.2e} (fp64), {worst32:.2e} (fp32), "
            f"tolerance {c['tolerance']:.2e}, {len(c['runs'])} inputs: {verdict}"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rowfuse.lab", description=__doc__.split("\n")[0])
    p.add_argument("model", choices=models.MODELS)
    p.add_argument("-o", "--output", required=True, help="lab folder to write (replaced)")
    p.add_argument("--targets", default=",".join(stages.TARGETS))
    p.add_argument("--cuda-target", default=stages.CUDA_TARGET)
    p.add_argument("--no-check", action="store_true", help="skip the llvm-cpu run")
    args = p.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in stages.TARGETS:
            p.error(f"unknown target '{t}' (known: {', '.join(stages.TARGETS)})")
    try:
        index = build.build_lab(
            args.model,
            args.output,
            targets=targets,
            cuda_target=args.cuda_target,
            run_check=not args.no_check and "llvm-cpu" in targets,
            progress=lambda msg: print(msg, flush=True),
        )
    except stages.LabError as e:
        print(f"rowfuse.lab: {e}", file=sys.stderr)
        return 2
    _print_summary(index)
    print(f"wrote {args.output}/index.json")
    missing = artifacts.problems(args.output, index)
    for m in missing:
        print(f"rowfuse.lab: incomplete: {m}", file=sys.stderr)
    if missing:
        return 2
    return 0 if index.get("check", {"ok": True})["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
