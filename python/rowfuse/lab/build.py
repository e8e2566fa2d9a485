"""One lab folder for one model: every stage (rowfuse.lab.stages), the dispatch summary
(rowfuse.lab.dispatches), the CPU check (rowfuse.lab.check) and the index."""

from __future__ import annotations

import os
import shutil
from importlib.metadata import version

from . import artifacts, check, dispatches, models, stages


def _versions() -> dict:
    names = ["torch", "iree-base-compiler", "iree-base-runtime", "iree-turbine"]
    return {n: version(n) for n in names}


def build_lab(
    name: str,
    out: str,
    targets=tuple(stages.TARGETS),
    cuda_target: str = stages.CUDA_TARGET,
    run_check: bool = True,
    progress=None,
) -> dict:
    """Builds the lab folder `out` for model `name` (replacing it); returns the index."""
    say = progress or (lambda msg: None)
    module = models.build(name)
    example = models.make_input(name, 0)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with open(os.path.join(out, "compile.log"), "w") as log:
        say(f"{name}: torch.export")
        ep = stages.export_fx(module, example, out)
        say(f"{name}: iree-turbine import")
        torch_mlir = stages.import_torch_mlir(ep, out)
        linalg = stages.lower_to_input(torch_mlir, out, log)
        summary = {}
        for t in targets:
            say(f"{name}: iree-compile {t} ({len(stages.PHASES)} phases)")
            stages.compile_target(linalg, out, t, log, cuda_target)
            summary[t] = dispatches.summarize_target(os.path.join(out, t))
    with open(os.path.join(out, "model.fx.txt")) as f:
        fx_ops = dispatches.fx_op_count(f.read())
    info = {
        "model": name,
        "input_shape": list(example.shape),
        "targets": {t: stages.target_flags(t, cuda_target) for t in targets},
        "cuda_target": cuda_target if "cuda" in targets else None,
        "phases": ["input", *stages.PHASES],
        "versions": _versions(),
        "torch_ops": fx_ops,
        "dispatch_summary": summary,
    }
    if run_check:
        if "llvm-cpu" not in targets:
            raise stages.LabError("the CPU check needs the llvm-cpu target")
        say(f"{name}: llvm-cpu module vs PyTorch")
        info["check"] = check.check_cpu(out, name)
    return artifacts.write_index(out, info)
