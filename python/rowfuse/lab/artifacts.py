"""The lab folder's index (index.json): every artifact with its stage, target and size.

Stages: fx, torch-mlir, linalg-mlir, phase:<IREE phase>, executable-source,
executable-configuration, executable-benchmark, llvm-ir, llvm-bitcode, object, assembly,
binary, ptx, vmfb, log, check. `rowfuse inspect DIR` lists this index.
"""

from __future__ import annotations

import json
import os

SCHEMA = "rowfuse-lab/1"
INDEX = "index.json"

TOP_LEVEL = {
    "model.fx.txt": "fx",
    "model.torch.mlir": "torch-mlir",
    "model.linalg.mlir": "linalg-mlir",
    "compile.log": "log",
    "check.json": "check",
}

BY_SUFFIX = [
    (".ptx", "ptx"),
    (".ll", "llvm-ir"),
    (".bc", "llvm-bitcode"),
    (".o", "object"),
    (".s", "assembly"),
    (".so", "binary"),
]


def stage_of(rel: str) -> str:
    """The stage of the artifact at `rel` (a path relative to the lab folder)."""
    parts = rel.split("/")
    if len(parts) == 1:
        return TOP_LEVEL.get(rel, "other")
    name = parts[-1]
    if parts[1] == "phases" and name.endswith(".mlir"):
        return "phase:" + name[:-5].split("-", 1)[1]
    if name == "module.vmfb":
        return "vmfb"
    if parts[1] == "executables":
        for suffix, stage in BY_SUFFIX:
            if name.endswith(suffix):
                return stage
        if name.endswith("_benchmark.mlir"):
            return "executable-benchmark"
        if name.startswith("configured_"):
            return "executable-configuration"
        if name.endswith(".mlir"):
            return "executable-source"
    return "other"


def list_artifacts(out: str) -> list[dict]:
    """Every file under `out` except the index, sorted by name."""
    found = []
    for root, dirs, files in os.walk(out):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, out).replace(os.sep, "/")
            if rel == INDEX:
                continue
            target = rel.split("/")[0] if "/" in rel else None
            found.append(
                {
                    "name": rel,
                    "stage": stage_of(rel),
                    "target": target,
                    "bytes": os.path.getsize(path),
                }
            )
    return found


def write_index(out: str, info: dict) -> dict:
    """Writes out/index.json: `info` plus the artifact list; returns what it wrote."""
    index = {"schema": SCHEMA, **info, "artifacts": list_artifacts(out)}
    with open(os.path.join(out, INDEX), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return index


def required_stages(targets, phases) -> list[tuple[str | None, str]]:
    """(target, stage) pairs a complete lab folder has at least one artifact of."""
    need = [(None, "fx"), (None, "torch-mlir"), (None, "linalg-mlir")]
    for t in targets:
        need += [(t, f"phase:{p}") for p in phases]
        need += [(t, "vmfb"), (t, "executable-source"), (t, "llvm-ir")]
        need.append((t, "ptx" if t == "cuda" else "object"))
    return need


def problems(out: str, index: dict, min_bytes: int = 64) -> list[str]:
    """What is missing or wrong in lab folder `out` against its index: a required stage
    without an artifact, a listed file that is absent, smaller than min_bytes, or whose
    size differs from the index. Empty when complete."""
    found = []
    have = {(a["target"], a["stage"]) for a in index["artifacts"]}
    phases = [p for p in index["phases"] if p != "input"]
    for target, stage in required_stages(index["targets"], phases):
        if (target, stage) not in have:
            found.append(f"no {stage} artifact" + (f" for {target}" if target else ""))
    for a in index["artifacts"]:
        path = os.path.join(out, a["name"])
        if not os.path.isfile(path):
            found.append(f"{a['name']}: listed but missing")
        elif os.path.getsize(path) != a["bytes"]:
            found.append(f"{a['name']}: {os.path.getsize(path)} bytes, index says {a['bytes']}")
        elif a["bytes"] < min_bytes and a["stage"] not in ("log", "other"):
            found.append(f"{a['name']}: only {a['bytes']} bytes")
    return found


def read_index(out: str) -> dict:
    with open(os.path.join(out, INDEX)) as f:
        index = json.load(f)
    if index.get("schema") != SCHEMA:
        raise ValueError(f"{out}/{INDEX}: schema {index.get('schema')!r}, expected {SCHEMA}")
    return index
