"""Where an installed rowfuse keeps its compiled parts and the C files its kernel generator
reads, and which rowfuse command to run.

`pip install .` puts the shared libraries in rowfuse/_lib/ and the public headers and the
package shim (src/pkg/rf_pkg_shim.c) under rowfuse/_data/, beside this package's modules,
and the `rowfuse` command in the environment's bin/. A source checkout imported without
installing (PYTHONPATH=python, as some tests do) has neither: the libraries then come from
$ROWFUSE_LIB / $ROWFUSE_RUNTIME_LIB, the C files from the checkout this module sits in.
"""

from __future__ import annotations

import os
import shutil
import sys

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB_DIR = os.path.join(PACKAGE_DIR, "_lib")
DATA_DIR = os.path.join(PACKAGE_DIR, "_data")
_CHECKOUT = os.path.dirname(os.path.dirname(PACKAGE_DIR))  # python/rowfuse -> the repository


class NotInstalled(RuntimeError):
    """A part of rowfuse this process needs is neither installed nor named by the environment."""


def library(env: str, name: str) -> str:
    """$env, else the copy installed with this package (rowfuse/_lib/name)."""
    if os.environ.get(env):
        return os.environ[env]
    path = os.path.join(LIB_DIR, name)
    if os.path.exists(path):
        return path
    raise NotInstalled(
        f"{name} is not installed with this rowfuse package ({LIB_DIR}) and ${env} is not "
        f"set: install rowfuse (pip install .) or set {env} to a build's {name}"
    )


def c_file(*parts: str) -> str:
    """A C file rowfuse ships to its kernel generator, by its path in the repository
    (e.g. "include", "rowfuse", "kernel_abi.h"): the installed copy, else the checkout's."""
    for root in (DATA_DIR, _CHECKOUT):
        path = os.path.join(root, *parts)
        if os.path.exists(path):
            return path
    raise NotInstalled(
        f"{'/'.join(parts)} is not installed with this rowfuse package ({DATA_DIR}): "
        "install rowfuse (pip install .)"
    )


def cli() -> str:
    """The rowfuse command: $RF_BIN, else the one installed beside this interpreter (one
    environment's bin/), else the first on PATH."""
    if os.environ.get("RF_BIN"):
        return os.environ["RF_BIN"]
    beside = os.path.join(os.path.dirname(sys.executable), "rowfuse")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("rowfuse")
    if found:
        return found
    raise NotInstalled("no rowfuse command: install rowfuse (pip install .) or set RF_BIN")
