"""The lab's compile stages, each writing its own file into the lab folder.

    export      torch.export -> model.fx.txt (the FX graph as text)
    import      iree-turbine  -> model.torch.mlir (torch dialect)
    input       iree-compile --compile-to=input -> model.linalg.mlir (what IREE compiles)
    phases      per target, one iree-compile call per phase, each resuming from the last
                (--compile-from=P1 --compile-to=P2) -> TARGET/phases/NN-PHASE.mlir;
                every call also dumps the executables (sources, configurations, LLVM IR,
                PTX, objects) into TARGET/executables/
    module      the last call -> TARGET/module.vmfb

Targets: llvm-cpu (the host CPU) and cuda. The pinned IREE knows no sm_90 target
(``--iree-cuda-target=sm_90`` leaves the executables without a GPU target and fails), so
the CUDA target is sm_89, the newest architecture it knows that an sm_90 GPU can run:
its PTX (ISA 8.4) is JIT-compiled by the driver (notes/lab.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings

CUDA_TARGET = "sm_89"

# IREE's compilation phases after `input`, in order (iree-compile --compile-to).
PHASES = [
    "abi",
    "preprocessing",
    "global-optimization",
    "dispatch-creation",
    "flow",
    "stream",
    "executable-sources",
    "executable-configurations",
    "executable-targets",
    "hal",
    "vm",
]

TARGETS = ["llvm-cpu", "cuda"]


class LabError(RuntimeError):
    """A stage failed; the message names the stage and the tool's own error."""


def iree_compile_path() -> str:
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


def target_flags(target: str, cuda_target: str = CUDA_TARGET) -> list[str]:
    if target == "llvm-cpu":
        return [
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=host",
        ]
    if target == "cuda":
        return ["--iree-hal-target-device=cuda", f"--iree-cuda-target={cuda_target}"]
    raise LabError(f"unknown target '{target}' (known: {', '.join(TARGETS)})")


def _run(cmd: list[str], what: str, log) -> None:
    log.write("$ " + " ".join(cmd) + "\n")
    p = subprocess.run(cmd, capture_output=True, text=True)
    log.write(p.stdout + p.stderr)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[:12]
        raise LabError(f"{what} failed (exit {p.returncode}):\n" + "\n".join(tail))


def export_fx(module, example, out: str) -> object:
    """torch.export; writes the FX graph as text to out/model.fx.txt; returns the program."""
    import torch

    with torch.no_grad():
        ep = torch.export.export(module, (example,))
    with open(os.path.join(out, "model.fx.txt"), "w") as f:
        f.write(ep.graph_module.print_readable(print_output=False))
        f.write("\n# graph\n")
        f.write(str(ep.graph))
        f.write("\n")
    return ep


def import_torch_mlir(ep, out: str, name: str = "model.torch.mlir") -> str:
    """iree-turbine's importer on the exported program -> out/NAME."""
    from iree.turbine import aot

    path = os.path.join(out, name)
    with warnings.catch_warnings():
        # turbine copies weights with np.array(tensor), which numpy 2 flags; harmless.
        warnings.filterwarnings("ignore", "__array__ implementation", DeprecationWarning)
        aot.export(ep).save_mlir(path)
    return path


def lower_to_input(torch_mlir: str, out: str, log) -> str:
    """Target-independent `input` phase: torch dialect -> linalg (model.linalg.mlir)."""
    path = os.path.join(out, "model.linalg.mlir")
    _run([iree_compile_path(), torch_mlir, "--compile-to=input", "-o", path], "input", log)
    return path


def compile_target(linalg: str, out: str, target: str, log, cuda_target=CUDA_TARGET) -> str:
    """Runs the phases for one target from the linalg input; returns the .vmfb path."""
    tdir = os.path.join(out, target)
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(os.path.join(tdir, "phases"))
    dump = os.path.join(tdir, "executables")
    flags = target_flags(target, cuda_target) + [f"--iree-hal-dump-executable-files-to={dump}"]
    tool = iree_compile_path()
    prev, prev_phase = linalg, "input"
    for i, phase in enumerate(PHASES, start=1):
        dst = os.path.join(tdir, "phases", f"{i:02d}-{phase}.mlir")
        cmd = [tool, prev, f"--compile-from={prev_phase}", f"--compile-to={phase}", *flags]
        _run(cmd + ["-o", dst], f"{target}: phase {phase}", log)
        prev, prev_phase = dst, phase
    vmfb = os.path.join(tdir, "module.vmfb")
    _run([tool, prev, f"--compile-from={prev_phase}", *flags, "-o", vmfb], f"{target}: vmfb", log)
    return vmfb
