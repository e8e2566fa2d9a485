"""The kernel generator: builds one rowfuse kernel package from a specification (no GPU).

    python -m rowfuse.kernels.build --spec PKGDIR/kernel_spec.json --out PKGDIR [--link so|objects]

`rowfuse compile` decides everything (src/compile) and writes kernel_spec.json: the
target, the shape and every kernel's complete geometry (rowfuse/plan.h). This program
decides nothing. It compiles each kernel with the CuTe DSL for the target's arch, exports
it with `export_to_c` (header + host object with the cubin inside), writes the package's
kernel table rf_pkg_table.h for the checked-in shim src/pkg/rf_pkg_shim.c, links both with
the DSL's static CUDA-dialect runtime and libcudart_static into librowfuse_pkg.so (the GPU
machine needs only the driver), and reports facts in kernels.json: per kernel its files,
registers (from the cubin), PTX instruction counts and compile time.

PKGDIR gets: librowfuse_pkg.so (unless --link objects), rf_pkg_shim.c and rf_pkg_table.h,
link.sh (the link line, to relink from the objects elsewhere), kernels.json, and per kernel
kernels/<name>.{h,o,ptx,mlir,cubin} plus <name>.sass when nvdisasm is available.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from rowfuse.capi import locate
from rowfuse.capi.names import PLAN_VERSION as SPEC_VERSION

SPEC_FORMAT = "rowfuse-kernel-spec"
HOST_TRIPLE = "x86_64-unknown-linux-gnu"


def _find_tool(name: str) -> str | None:
    """A CUDA tool from PATH, CUDA_HOME, or the copy Triton's package carries."""
    path = shutil.which(name)
    if path:
        return path
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", name)):
            return os.path.join(root, "bin", name)
    try:
        import triton  # noqa: PLC0415

        cand = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
        if os.path.exists(cand):
            return cand
    except ImportError:
        pass
    return None


def _cuda_home() -> str:
    nvcc = _find_tool("nvcc")
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda"


def dsl_runtime_lib() -> str:
    import nvidia_cutlass_dsl  # noqa: PLC0415  (a namespace package: no __file__)

    root = list(nvidia_cutlass_dsl.__path__)[0]
    libs = sorted(glob.glob(os.path.join(root, "*", "lib", "libcuda_dialect_runtime_static.a")))
    if not libs:
        raise SystemExit(f"build: libcuda_dialect_runtime_static.a not found under {root}")
    return libs[0]


def make_kernel(k: dict, smem_row_pad: int):
    """The generator object of one spec entry: its mode names the generator (the Hopper
    family for fused_wgmma, the chain generator for chain_mma, the mma.sync family for the
    others); each checks its entry."""
    from rowfuse.kernels import chain_mma as cm  # noqa: PLC0415
    from rowfuse.kernels import chain_stream as cs  # noqa: PLC0415
    from rowfuse.kernels import chain_wgmma as cw  # noqa: PLC0415
    from rowfuse.kernels import rowfuse_hopper as rh  # noqa: PLC0415
    from rowfuse.kernels import rowfuse_kernels as rk  # noqa: PLC0415

    if k.get("mode") == "fused_wgmma":
        return rh.WgmmaMlpKernel(rh.HopperPlan.from_spec(k))
    if k.get("mode") == cw.MODE:
        return cw.ChainGemmKernel(cw.GemmPlan.from_spec(k))
    if k.get("mode") == cm.MODE:
        return cm.make_kernel(cm.ChainPlan.from_spec(k, smem_row_pad))
    if k.get("mode") == cs.MODE:
        return cs.StreamKernel(cs.StreamPlan.from_spec(k, smem_row_pad))
    return rk.MlpKernel(rk.Plan.from_spec(k, smem_row_pad))


def _is_chain(k: dict) -> bool:
    """A chain kernel (launched through rf_pkg_launch_chain): chain_mma, chain_stream or a
    conventional schedule's chain_wgmma GEMM."""
    return k.get("mode") in ("chain_mma", "chain_stream", "chain_wgmma")


def _is_stream(k: dict) -> bool:
    """A chain_stream kernel: its launcher also passes the scratch buffer."""
    return k.get("mode") == "chain_stream"


def compile_kernel(kern, arch: str, kdir: str, dump_root: str) -> dict:
    """Compile one kernel, export it, and collect its PTX / MLIR / cubin / SASS."""
    import cuda.bindings.driver as cuda  # noqa: PLC0415
    import cutlass  # noqa: PLC0415
    import cutlass.cute as cute  # noqa: PLC0415

    from rowfuse.kernels import chain_mma as cm  # noqa: PLC0415
    from rowfuse.kernels import chain_stream as cs  # noqa: PLC0415
    from rowfuse.kernels import chain_wgmma as cw  # noqa: PLC0415
    from rowfuse.kernels import rowfuse_kernels as rk  # noqa: PLC0415

    plan = kern.p
    f16, f32 = cutlass.Float16, cutlass.Float32

    fake = rk.fake_tensor

    if isinstance(kern, cm.ChainKernel):
        args = cm.compile_args(plan)
    elif isinstance(kern, cw.ChainGemmKernel):
        args = cw.compile_args(plan)
    elif isinstance(kern, cs.StreamKernel):
        args = cs.compile_args(plan)
    else:
        c, h = plan.channels, plan.hidden
        rows = cute.SymInt()
        args = (
            fake(f16, (rows, c)),
            fake(f16, (c, h)),
            fake(f32, (h,)),
            fake(f16, (h, c)),
            fake(f32, (c,)),
            fake(f16, (rows, h)),
            fake(f32, (rows, c)),
            1,
            1,
            cuda.CUstream(0),
        )
    before = set(os.listdir(dump_root))
    t0 = time.time()
    opts = f"--gpu-arch {arch} --host-target 'llvm -mtriple={HOST_TRIPLE}'"
    compiled = cute.compile(kern, *args, options=opts)
    compiled.export_to_c(kdir, plan.name, plan.name)
    files = collect_dumps(plan.name, kdir, dump_root, sorted(set(os.listdir(dump_root)) - before))
    ptx = open(os.path.join(kdir, f"{plan.name}.ptx")).read()
    info = {
        "name": plan.name,
        "registers": cubin_registers(os.path.join(kdir, f"{plan.name}.cubin")),
        "ptx_mma": ptx.count("mma.sync.aligned"),
        "ptx_ldmatrix": ptx.count("ldmatrix.sync"),
        "ptx_bar_sync": ptx.count("bar.sync"),
        "ptx_cp_async": ptx.count("cp.async.") - ptx.count("cp.async.bulk"),
        "ptx_wgmma": ptx.count("wgmma.mma_async"),
        "ptx_tma": ptx.count("cp.async.bulk.tensor"),
        "ptx_atomic": len(re.findall(r"\b(?:atom|red)\.", ptx)),
        "ptx_fence": len(re.findall(r"\b(?:fence|membar)\.", ptx)),
        "compile_seconds": round(time.time() - t0, 2),
        "files": files,
    }
    if "sass" in files:
        sass = open(os.path.join(kdir, f"{plan.name}.sass")).read()
        info["sass_hmma"] = len(re.findall(r"\bHMMA\b", sass))
        info["sass_hgmma"] = len(re.findall(r"\bHGMMA\b", sass))
        info["sass_local"] = len(re.findall(r"\b(?:LDL|STL)\b", sass))
    return info


def collect_dumps(prefix: str, kdir: str, dump_root: str, new: list[str]) -> dict:
    """Moves the DSL's kept PTX / cubin / IR of one kernel into kernels/, disassembles the
    cubin when nvdisasm is here, and returns the package-relative paths."""
    files = {"header": f"kernels/{prefix}.h", "object": f"kernels/{prefix}.o"}
    suffixes = ((".ptx", "ptx"), (".cubin", "cubin"), ("_clean.mlir", "mlir"), (".mlir", "mlir"))
    for fname in new:
        src = os.path.join(dump_root, fname)
        key = next((k for suf, k in suffixes if fname.endswith(suf) and k not in files), None)
        if key is None:
            os.remove(src)
            continue
        shutil.move(src, os.path.join(kdir, f"{prefix}.{key}"))
        files[key] = f"kernels/{prefix}.{key}"
    missing = [k for k in ("ptx", "mlir", "cubin") if k not in files]
    if missing:
        raise SystemExit(f"build: {prefix}: the DSL kept no {', '.join(missing)}")
    nvdisasm = _find_tool("nvdisasm")
    if nvdisasm:
        out = subprocess.run(
            [nvdisasm, "-c", os.path.join(kdir, f"{prefix}.cubin")], capture_output=True, text=True
        )
        if out.returncode == 0:
            with open(os.path.join(kdir, f"{prefix}.sass"), "w") as f:
                f.write(out.stdout)
            files["sass"] = f"kernels/{prefix}.sass"
    return files


def cubin_registers(path: str) -> int | None:
    """Registers per thread of the (one) kernel in a cubin: the EIATTR_REGCOUNT (0x2f)
    attribute of its .nv.info section; None when not found."""
    import struct  # noqa: PLC0415

    try:
        d = open(path, "rb").read()
        shoff = struct.unpack_from("<Q", d, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
        secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
        names = secs[shstrndx][4]
        for sec in secs:
            name = d[names + sec[0] : d.index(b"\0", names + sec[0])]
            if name != b".nv.info":
                continue
            off, end = sec[4], sec[4] + sec[5]
            while off + 4 <= end:
                fmt, attr, size = d[off], d[off + 1], struct.unpack_from("<H", d, off + 2)[0]
                if fmt == 0x04 and attr == 0x2F and size == 8:
                    return struct.unpack_from("<I", d, off + 8)[0]
                off += 4 + (size if fmt == 0x04 else 0)
    except (OSError, struct.error, ValueError, IndexError):
        return None
    return None


def write_table(pkg: str, spec: dict) -> str:
    """rf_pkg_table.h: the package's kernel table for the checked-in shim. MLP kernels are
    listed by RF_PKG_KERNELS(X), chain_mma kernels by RF_PKG_CHAIN_KERNELS(X), chain_stream
    kernels by RF_PKG_STREAM_KERNELS(X) and a conventional schedule's chain_mma kernels by
    RF_PKG_SEG_KERNELS(X) (their launchers take other arguments), and
    RF_PKG_KERNEL_LIST(X, C) gives every kernel in the spec's (plan.json's) order. A chain
    package's shape is its chain's input and output widths."""
    names = [k["name"] for k in spec["kernels"]]
    mlp = [k["name"] for k in spec["kernels"] if not _is_chain(k)]
    chain = [k for k in spec["kernels"] if _is_chain(k)]
    stream = [k["name"] for k in chain if _is_stream(k)]
    seg = [k["name"] for k in chain if "segment" in k]
    width_in = chain[0]["in_width"] if chain else spec["channels"]
    width_out = chain[0]["out_width"] if chain else spec["hidden"]
    lines = [
        "/* Generated by rowfuse.kernels.build from kernel_spec.json: the kernel table of one",
        " * package, for src/pkg/rf_pkg_shim.c. */",
        f"#define RF_PKG_CHANNELS {width_in}",
        f"#define RF_PKG_HIDDEN {width_out}",
    ]
    lines += [f'#include "kernels/{n}.h"' for n in names]
    lines.append("#define RF_PKG_KERNELS(X) " + " ".join(f"X({n})" for n in mlp))
    lines.append(
        "#define RF_PKG_CHAIN_KERNELS(X) "
        + " ".join(f"X({k['name']})" for k in chain if not _is_stream(k) and "segment" not in k)
    )
    lines.append("#define RF_PKG_SEG_KERNELS(X) " + " ".join(f"X({n})" for n in seg))
    lines.append("#define RF_PKG_STREAM_KERNELS(X) " + " ".join(f"X({n})" for n in stream))
    order = " ".join(
        f"C({k['name']})" if _is_chain(k) else f"X({k['name']})" for k in spec["kernels"]
    )
    lines.append("#define RF_PKG_KERNEL_LIST(X, C) " + order)
    # A planted fault (tests of the checks only): RF_PKG_FAULT_<SPELLING>, which the shim
    # reads for the faults planted in its launchers (e.g. stream_legacy).
    faults = sorted({k["fault"] for k in spec["kernels"] if k.get("fault")})
    lines += [f"#define RF_PKG_FAULT_{f.upper()} 1" for f in faults]
    with open(os.path.join(pkg, "rf_pkg_table.h"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.copy(locate.c_file("src", "pkg", "rf_pkg_shim.c"), pkg)
    return os.path.join(pkg, "rf_pkg_table.h")


def write_link_script(pkg: str, objects: list[str]) -> str:
    """link.sh: relinks librowfuse_pkg.so from the package's objects (here or on the GPU
    machine: needs gcc, the CUDA toolkit's libcudart_static.a and the dialect runtime,
    which the package carries as lib/libcuda_dialect_runtime_static.a)."""
    objs = " ".join(objects)
    script = f"""#!/bin/sh
# Relinks librowfuse_pkg.so from this package's objects. Usage: sh link.sh [CUDA_HOME]
set -e
cd "$(dirname "$0")"
CUDA_HOME=${{1:-${{CUDA_HOME:-/usr/local/cuda}}}}
RF_INC=${{RF_INC:-include}}
${{CC:-gcc}} -O2 -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter \\
  -c rf_pkg_shim.c -o rf_pkg.o -I. -I"$RF_INC" -I"$CUDA_HOME/include"
${{CC:-gcc}} -shared -o librowfuse_pkg.so rf_pkg.o {objs} \\
  lib/libcuda_dialect_runtime_static.a "$CUDA_HOME/lib64/libcudart_static.a" \\
  -s -Wl,--version-script=exports.map -Wl,--exclude-libs,ALL -Wl,--no-undefined \\
  -Wl,-z,noexecstack \\
  -lpthread -ldl -lrt
rm -f rf_pkg.o
"""
    with open(os.path.join(pkg, "exports.map"), "w") as f:
        f.write("{ global: rf_pkg_*; local: *; };\n")
    path = os.path.join(pkg, "link.sh")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o755)
    return path


def read_spec(path: str) -> dict:
    """kernel_spec.json, checked for the format and version this generator speaks."""
    try:
        spec = json.load(open(path))
    except (OSError, ValueError) as e:
        raise SystemExit(f"build: cannot read the kernel specification {path}: {e}") from None
    if spec.get("format") != SPEC_FORMAT or spec.get("version") != SPEC_VERSION:
        raise SystemExit(
            f"build: {path} is {spec.get('format')} version {spec.get('version')}; this "
            f"generator reads {SPEC_FORMAT} version {SPEC_VERSION}"
        )
    if not spec.get("kernels"):
        raise SystemExit(f"build: {path} lists no kernels")
    return spec


def compress(pkg: str, kernels: list[dict]) -> None:
    """gzip the IR, PTX and SASS (kernels/<k>.mlir.gz ...) to keep packages small."""
    for k in kernels:
        for key in ("mlir", "ptx", "sass"):
            if key in k["files"]:
                src = os.path.join(pkg, k["files"][key])
                with open(src, "rb") as fi, gzip.open(src + ".gz", "wb") as fo:
                    shutil.copyfileobj(fi, fo)
                os.remove(src)
                k["files"][key] += ".gz"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="kernel_spec.json written by rowfuse compile")
    ap.add_argument("--out", required=True, help="the package directory")
    ap.add_argument("--link", choices=("so", "objects"), default="so")
    ap.add_argument("--compress", action="store_true", help="gzip the kept IR, PTX and SASS")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    spec = read_spec(a.spec)
    arch = spec["target"]["arch"]

    os.environ["CUTE_DSL_ARCH"] = arch
    dump_root = tempfile.mkdtemp(prefix="rf_dsl_dump_")
    os.environ["CUTE_DSL_KEEP"] = "ir,ptx,cubin"
    os.environ["CUTE_DSL_DUMP_DIR"] = dump_root
    from rowfuse.kernels import rowfuse_hopper as rh  # noqa: PLC0415
    from rowfuse.kernels import rowfuse_kernels as rk  # noqa: PLC0415

    pkg = os.path.abspath(a.out)
    kdir = os.path.join(pkg, "kernels")
    os.makedirs(kdir, exist_ok=True)
    os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
    facts = {"generator": f"CuTe DSL {dsl_version()} export_to_c, {arch}", "kernels": []}
    try:
        for k in spec["kernels"]:
            kern = make_kernel(k, spec["smem_row_pad"])
            info = compile_kernel(kern, arch, kdir, dump_root)
            facts["kernels"].append(info)
            if not a.quiet:
                mma = info["ptx_wgmma"] or info["ptx_mma"]
                print(f"build: {kern.p.name}: {info['registers']} registers, {mma} mma")
    except (rk.SpecError, rh.SpecError) as e:
        raise SystemExit(f"build: {a.spec}: {e}") from None
    finally:
        shutil.rmtree(dump_root, ignore_errors=True)

    write_table(pkg, spec)
    shutil.copy(dsl_runtime_lib(), os.path.join(pkg, "lib", "libcuda_dialect_runtime_static.a"))
    inc = os.path.join(pkg, "include", "rowfuse")
    os.makedirs(inc, exist_ok=True)
    shutil.copy(locate.c_file("include", "rowfuse", "kernel_abi.h"), inc)
    link = write_link_script(pkg, [k["files"]["object"] for k in facts["kernels"]])
    if a.link == "so":
        subprocess.run(["sh", link, _cuda_home()], check=True)
        facts["library_bytes"] = os.path.getsize(os.path.join(pkg, spec["library"]))
    if a.compress:
        compress(pkg, facts["kernels"])
    with open(os.path.join(pkg, "kernels.json"), "w") as f:
        json.dump(facts, f, indent=2)
        f.write("\n")
    if not a.quiet:
        print(f"build: wrote {pkg}")
    return 0


def dsl_version() -> str:
    try:
        import importlib.metadata as im  # noqa: PLC0415

        return im.version("nvidia-cutlass-dsl")
    except Exception:  # noqa: BLE001
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
