"""Runs a lab folder's llvm-cpu module on fresh random inputs and compares it with PyTorch
(fp64 and fp32, the same fixed-seed weights) within rowfuse.lab.numerics' tolerance."""

from __future__ import annotations

import json
import os
import random

from . import iree_run, models, numerics


def reference(name: str, x):
    """PyTorch's fp64 and fp32 outputs of model `name` on input x (fp32 tensor)."""
    import torch

    with torch.no_grad():
        y64 = models.build(name).double()(x.double()).numpy()
        y32 = models.build(name)(x).numpy()
    return y64, y32


def check_cpu(out: str, name: str, trials: int = 3, seed: int | None = None) -> dict:
    """Runs out/llvm-cpu/module.vmfb `trials` times; writes out/check.json; returns it."""
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    module = iree_run.load(os.path.join(out, "llvm-cpu", "module.vmfb"), "local-task")
    tol = numerics.tolerance(models.contraction_lengths(name))
    runs = []
    for t in range(trials):
        x = models.make_input(name, seed + t)
        y64, y32 = reference(name, x)
        y = module(x.numpy()).to_host()
        runs.append({"seed": seed + t, **numerics.compare(y, y64, y32, tol)})
    result = {
        "target": "llvm-cpu",
        "driver": "local-task",
        "model": name,
        "tolerance": tol,
        "ok": all(r["ok"] for r in runs),
        "runs": runs,
    }
    with open(os.path.join(out, "check.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return result
