"""What IREE made of a model, read from the IR it kept: dispatches and what each fused.

- torch ops: call_function nodes of the FX graph (model.fx.txt's graph section);
- dispatches per call: `flow.dispatch @` sites in the flow phase, outside initializers;
- launches per call: `hal.command_buffer.dispatch` in the hal phase, outside initializers
  (a memoized command buffer is recorded in a function the initializer calls, so those
  are counted: they are what every call replays);
- executables: the executable sources IREE dumped, one per dispatch, each with the
  linalg ops it fused (named ops by name, linalg.generic by its iterator kind and the
  arith/math ops in its body, e.g. ``generic[parallel]{addf,cmpf,select}`` = bias + ReLU).
"""

from __future__ import annotations

import glob
import os
import re

_OP = re.compile(r"\b((?:linalg|iree_linalg_ext)\.[a-z_0-9]+)\b(?!\s*=)")  # not attributes
_BODY_OP = re.compile(r"\b(?:arith|math)\.([a-z_0-9]+)")
_SKIP = {"linalg.yield", "linalg.index", "iree_linalg_ext.yield"}


def fx_op_count(fx_text: str) -> int:
    graph = fx_text.split("\n# graph\n", 1)[-1]
    return sum(1 for ln in graph.splitlines() if "call_function[target=" in ln)


def _top_level_blocks(mlir: str):
    """(header line, body) of each top-level op of the module (2-space indent)."""
    blocks, head, body = [], None, []
    for ln in mlir.splitlines():
        if ln.startswith("  ") and not ln.startswith("   "):
            if head is not None:
                blocks.append((head, "\n".join(body)))
            head, body = ln, []
        elif head is not None:
            body.append(ln)
    if head is not None:
        blocks.append((head, "\n".join(body)))
    return blocks


def count_in_functions(mlir: str, needle: str) -> int:
    """Occurrences of `needle` inside util.func/func.func bodies (not initializers)."""
    n = 0
    for head, body in _top_level_blocks(mlir):
        if "util.func" in head or "func.func" in head:
            n += body.count(needle)
    return n


def _generic_kind(block: str) -> str:
    m = re.search(r"iterator_types = \[([^\]]*)\]", block)
    kinds = m.group(1) if m else ""
    kind = "reduction" if "reduction" in kinds else "parallel"
    body = block.split("^bb0", 1)[-1].split("linalg.yield", 1)[0]
    ops = sorted(set(_BODY_OP.findall(body)))
    return f"generic[{kind}]{{{','.join(ops)}}}"


def fused_ops(source: str) -> list[str]:
    """The linalg ops in one dispatch's source, in order; ["copy"] when it has none."""
    ops = []
    for m in _OP.finditer(source):
        name = m.group(1)
        if name in _SKIP:
            continue
        if name == "linalg.generic":
            end = source.find("} ->", m.end())
            ops.append(_generic_kind(source[m.start() : end if end > 0 else len(source)]))
        else:
            ops.append(name.split(".", 1)[1] if name.startswith("linalg.") else name)
    return ops or ["copy"]  # a dispatch of loads and stores only (e.g. into a padded buffer)


def _dispatch_name(source: str, fallback: str) -> str:
    m = re.search(r"func\.func @([^\s(]+)\(", source)
    return m.group(1) if m else fallback


def _ordinal(name: str) -> int:
    m = re.search(r"dispatch_(\d+)", name)
    return int(m.group(1)) if m else -1


def summarize_target(tdir: str) -> dict:
    """Dispatch counts and fusion for one compiled target folder (lab/TARGET)."""
    phases = os.path.join(tdir, "phases")

    def phase_text(name):
        hits = glob.glob(os.path.join(phases, f"*-{name}.mlir"))
        if len(hits) != 1:
            raise FileNotFoundError(f"{phases}: no single *-{name}.mlir")
        with open(hits[0]) as f:
            return f.read()

    sources = sorted(
        p
        for p in glob.glob(os.path.join(tdir, "executables", "module_*.mlir"))
        if not p.endswith("_benchmark.mlir")
    )
    executables = []
    for p in sources:
        with open(p) as f:
            text = f.read()
        name = _dispatch_name(text, os.path.basename(p))
        executables.append({"name": name, "ops": fused_ops(text)})
    executables.sort(key=lambda e: _ordinal(e["name"]))
    return {
        "dispatches": count_in_functions(phase_text("flow"), "flow.dispatch @"),
        "launches": count_in_functions(phase_text("hal"), "hal.command_buffer.dispatch<"),
        "executables": executables,
    }
