"""Assembles what the GPU machine needs from built lab folders (it has no IREE compiler and
no package index):

    python -m rowfuse.lab.carry --lab build/lab --target cuda -o build/lab-gpu

For each model folder LAB/MODEL: OUT/MODEL/module.vmfb (the TARGET module),
OUT/MODEL/weights.npz (the weights compiled into it, so PyTorch there runs the very same
weights whatever its version's seeded initialisation gives) and OUT/MODEL/index.json (the
lab index: dispatch counts and fusion for the report).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import numpy as np

from . import artifacts, models


def save_weights(name: str, path: str) -> None:
    state = models.build(name).state_dict()
    np.savez(path, **{k: v.detach().cpu().numpy() for k, v in state.items()})


def load_weights(module, path: str) -> None:
    """Loads weights.npz into `module` (every tensor of its state_dict, exactly)."""
    import torch

    with np.load(path) as data:
        state = {k: torch.from_numpy(data[k]) for k in data.files}
    module.load_state_dict(state, strict=True)


def assemble(lab: str, target: str, out: str, names=None) -> list[str]:
    names = names or [n for n in models.MODELS if os.path.isdir(os.path.join(lab, n))]
    if not names:
        raise SystemExit(f"rowfuse.lab.carry: no lab folders under {lab}")
    for name in names:
        src = os.path.join(lab, name)
        index = artifacts.read_index(src)
        if target not in index["targets"]:
            raise SystemExit(f"rowfuse.lab.carry: {src} has no {target} module")
        dst = os.path.join(out, name)
        os.makedirs(dst, exist_ok=True)
        shutil.copyfile(os.path.join(src, target, "module.vmfb"), os.path.join(dst, "module.vmfb"))
        shutil.copyfile(os.path.join(src, artifacts.INDEX), os.path.join(dst, artifacts.INDEX))
        save_weights(name, os.path.join(dst, "weights.npz"))
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rowfuse.lab.carry")
    p.add_argument("--lab", required=True, help="folder of lab folders (one per model)")
    p.add_argument("--target", default="cuda")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--models", default="", help="comma-separated (default: all found)")
    args = p.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    for name in assemble(args.lab, args.target, args.output, names or None):
        print(f"  {name}: {args.output}/{name}/module.vmfb ({args.target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
