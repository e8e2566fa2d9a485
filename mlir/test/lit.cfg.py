# lit configuration of rowfuse-opt's tests (mlir/test). Run through `make mlir`, or
#   lit -sv build-mlir/mlir/test
# Tools: rowfuse-opt (build-mlir/bin), FileCheck and not (LLVM 22), and the pinned
# iree-compile (pip iree-base-compiler; its absence is fatal, not a skip): tests that hand
# rowfuse-opt's output to it say `REQUIRES: iree` and use %iree_compile.
import os
import shutil
import subprocess

import lit.formats

config.name = "rowfuse-mlir"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.rowfuse_test_exec_root

path = [config.rowfuse_opt_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "")])
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))


def _iree_compile():
    """The pinned iree-compile (pip iree-base-compiler), or None."""
    python = os.environ.get("RF_PYTHON") or shutil.which("python3")
    code = "from iree.compiler.tools import binaries; print(binaries.find_tool('iree-compile'))"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    tool = out.stdout.strip()
    return tool if out.returncode == 0 and tool and os.path.exists(tool) else None


iree = _iree_compile()
if not iree:
    # scripts/setup.sh installs it: a missing IREE is a failure here, never a skip
    lit_config.fatal("iree-compile not found (pip iree-base-compiler, scripts/setup.sh)")
if iree:
    config.available_features.add("iree")
    config.substitutions.append(("%iree_compile", iree))
    config.substitutions.append(
        (
            "%iree_cpu",
            "--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu"
            " --iree-llvmcpu-target-cpu=host",
        )
    )
    config.substitutions.append(
        ("%iree_cuda", "--iree-hal-target-device=cuda --iree-cuda-target=sm_89")
    )
