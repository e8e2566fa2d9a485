"""Ahead-of-time build of one rowfuse kernel package (no GPU needed).

    python3 kernels/build.py --channels C --hidden H --rows N [--tile-rows auto|16|32|64] \
        --arch sm_90a --out PKGDIR [--link so|objects] [--x-prefetch] [--split-w2]

For one (channels, hidden) shape it compiles the CuTe DSL kernels of all three schedules
(persistent-smem, persistent-gmem, conventional) for the GPU arch, exports each with
`export_to_c` (header + host object with the cubin inside), generates the C shim that
exports the functions of include/rowfuse/kernel_abi.h, and links everything with the
DSL's static CUDA-dialect runtime and libcudart_static into PKGDIR/librowfuse_pkg.so, so
the GPU machine needs only the driver. Rows are dynamic: one package serves any M
(nothing is specialised on --rows; `--tile-rows auto`, the default, uses it to choose
the tile rows per schedule, see choose_tiling).

PKGDIR gets: librowfuse_pkg.so (unless --link objects), rf_pkg.c (the shim), link.sh (the
link line, to relink from the objects elsewhere), kernels.json, and per kernel
kernels/<name>.{h,o,ptx,mlir,cubin} plus <name>.sass when nvdisasm is available (else
`rowfuse inspect` makes it on the GPU machine with cuobjdump from the cubin).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SCHEDULES = {
    # schedule name -> kernel modes, in launch order
    "persistent-smem": ["fused_smem"],
    "persistent-gmem": ["fused_gmem"],
    "conventional": ["proj1", "proj2"],
}
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


def compile_kernel(
    mode: str,
    channels: int,
    hidden: int,
    tile_rows: int,
    arch: str,
    prefix: str,
    kdir: str,
    dump_root: str,
    x_prefetch: bool = False,
    split_w2: bool = False,
    y_vec2: bool = False,
    grid: str = "smem",
    ring: bool = False,
    min_blocks: int = 0,
) -> dict:
    """Compile one kernel, export it, and collect its PTX / MLIR / cubin / SASS."""
    import cuda.bindings.driver as cuda  # noqa: PLC0415
    import cutlass  # noqa: PLC0415
    import cutlass.cute as cute  # noqa: PLC0415
    import rowfuse_kernels as rk  # noqa: PLC0415
    from cutlass.cute.runtime import make_fake_compact_tensor  # noqa: PLC0415

    plan = rk.make_plan(mode, channels, hidden, tile_rows, x_prefetch, split_w2, y_vec2, ring)
    if min_blocks:
        plan = dataclasses.replace(plan, min_blocks=min_blocks)
    kern = rk.MlpKernel(plan)
    f16, f32 = cutlass.Float16, cutlass.Float32

    def fake(dt, shape):
        order = tuple(range(len(shape) - 1, -1, -1))
        return make_fake_compact_tensor(dt, shape, stride_order=order, assumed_align=16)

    rows = cute.SymInt()
    args = (
        fake(f16, (rows, channels)),
        fake(f16, (channels, hidden)),
        fake(f32, (hidden,)),
        fake(f16, (hidden, channels)),
        fake(f32, (channels,)),
        fake(f16, (rows, hidden)),
        fake(f32, (rows, channels)),
        1,
        1,
        cuda.CUstream(0),
    )
    before = set(os.listdir(dump_root))
    t0 = time.time()
    opts = f"--gpu-arch {arch} --host-target 'llvm -mtriple={HOST_TRIPLE}'"
    compiled = cute.compile(kern, *args, options=opts)
    compiled.export_to_c(kdir, prefix, prefix)
    secs = time.time() - t0
    files = {"header": f"kernels/{prefix}.h", "object": f"kernels/{prefix}.o"}
    new = sorted(set(os.listdir(dump_root)) - before)
    for fname in new:
        src = os.path.join(dump_root, fname)
        for suffix, key in (
            (".ptx", "ptx"),
            (".cubin", "cubin"),
            ("_clean.mlir", "mlir"),
            (".mlir", "mlir"),
            (".sass", "sass"),
        ):
            if fname.endswith(suffix) and key not in files:
                dst = os.path.join(kdir, f"{prefix}.{key}")
                shutil.move(src, dst)
                files[key] = f"kernels/{prefix}.{key}"
                break
        else:
            os.remove(src)
    if "cubin" in files and "sass" not in files:
        nvdisasm = _find_tool("nvdisasm")
        if nvdisasm:
            out = subprocess.run(
                [nvdisasm, "-c", os.path.join(kdir, f"{prefix}.cubin")],
                capture_output=True,
                text=True,
            )
            if out.returncode == 0:
                with open(os.path.join(kdir, f"{prefix}.sass"), "w") as f:
                    f.write(out.stdout)
                files["sass"] = f"kernels/{prefix}.sass"
    missing = [k for k in ("ptx", "mlir", "cubin") if k not in files]
    if missing:
        raise SystemExit(f"build: {prefix}: the DSL kept no {', '.join(missing)}")
    ptx = open(os.path.join(kdir, f"{prefix}.ptx")).read()
    regs = cubin_registers(os.path.join(kdir, f"{prefix}.cubin"))
    info = {
        "name": prefix,
        "mode": mode,
        "threads": plan.threads,
        "warps_m": plan.warps_m,
        "warps_n": plan.warps_n,
        "tile_rows": plan.tile_rows,
        "smem_bytes": plan.smem_bytes,
        "padded_channels": plan.cp,
        "padded_hidden": plan.hp,
        "hidden_chunk": plan.hc,
        "hidden_chunks": plan.nchunks,
        "weight_buffers": plan.nbuf,
        "x_prefetch": plan.x_prefetch,
        "split_w2": plan.split_w2,
        "y_vec2": plan.y_vec2,
        "ring": plan.ring,
        "min_blocks": plan.min_blocks,
        "registers": regs,
        "grid": grid,
        "blocks_per_sm": blocks_per_sm(plan, regs if grid != "smem" else None),
        "ptx_mma": ptx.count("mma.sync.aligned"),
        "ptx_ldmatrix": ptx.count("ldmatrix.sync"),
        "ptx_cp_async": ptx.count("cp.async."),
        "compile_seconds": round(secs, 2),
        "files": files,
    }
    if "sass" in files:
        sass = open(os.path.join(kdir, f"{prefix}.sass")).read()
        info["sass_hmma"] = sass.count("HMMA")
    return info


# --grid auto: the grid rule per schedule (run 4 measured balanced for persistent-smem)
SCHED_GRID = {"persistent-smem": "balanced"}
SMS_SM90 = 132  # multiprocessors of the H200 / H100 SXM the packages are built for
AUTO_MIN_TILES = 119  # ~0.9 x SMS_SM90: tiles needed before a larger tile pays
AUTO_XPF_ROWS = 1000  # X prefetch + split W2 measured a win (or even) from here up


def choose_tiling(schedule: str, rows: int, channels: int, hidden: int) -> tuple[int, bool]:
    """Tile rows and X prefetch (with W2 split into its own cp.async group) for one
    schedule at an expected row count: `--tile-rows auto`.

    The largest tile of 64/32/16 rows that still gives about one tile per SM
    (ceil(rows / tile) >= AUTO_MIN_TILES), else 16; a tile the plan rejects (Y registers,
    shared memory) steps down. Larger tiles re-read the weights fewer times and keep more
    rows in flight per block, but fewer tiles than SMs leave SMs idle. X prefetch + split
    W2 for the fused schedules from AUTO_XPF_ROWS rows up (a no-op where the weights are
    chunked); below that the kernels are the ones verified since run 1. Fitted to the
    H200 run 3 (notes/kernels.md): at 49, 1000, 4096, 8192 and 131072 rows it picks the
    fastest tile measured for persistent-smem, and for the other schedules too except
    persistent-gmem at 131072x32x64 (t64 35.5 us vs t32 34.5 us)."""
    import rowfuse_kernels as rk  # noqa: PLC0415

    tile = 16
    for t in (64, 32):
        if -(-max(rows, 0) // t) >= AUTO_MIN_TILES:
            tile = t
            break
    xpf = rows >= AUTO_XPF_ROWS and schedule in ("persistent-smem", "persistent-gmem")
    for t in (64, 32, 16):
        if t > tile:
            continue
        try:
            for mode in SCHEDULES[schedule]:
                rk.make_plan(mode, channels, hidden, t, xpf, xpf)
        except rk.ShapeError:
            continue
        return t, xpf
    return 16, xpf


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


def blocks_per_sm(plan, regs: int | None = None) -> int:
    """Blocks of this kernel one SM holds, for the persistent grid: by shared memory and
    threads, and by registers when `regs` (per thread, from the cubin) is given (sm_90:
    64K registers per SM, allocated per warp in units of 256)."""
    smem_sm = 228 * 1024
    by_smem = smem_sm // (plan.smem_bytes + 1024)
    by_threads = 2048 // plan.threads
    by_regs = 32
    if regs:
        per_warp = -(-regs * 32 // 256) * 256
        by_regs = 65536 // (per_warp * (plan.threads // 32))
    return max(1, min(by_smem, by_threads, by_regs, 32))


SHIM_HEAD = """/* Generated by kernels/build.py: the C shim of one rowfuse kernel package.
 *
 * Exports the functions of include/rowfuse/kernel_abi.h for channels=%(C)d hidden=%(H)d
 * around the CuTe DSL kernels exported with export_to_c. Never prints: errors are
 * returned as CUDA error numbers.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static int rf_pkg_first_error;
#define CUTE_DSL_CUDA_ERROR_CHECK(err)                                                     \\
    do {                                                                                   \\
        if ((err) != cudaSuccess && rf_pkg_first_error == 0)                               \\
            rf_pkg_first_error = (int)(err);                                               \\
    } while (0)

%(includes)s
#include "rowfuse/kernel_abi.h"

#define RF_PKG_EXPORT __attribute__((visibility("default")))

enum { RF_C = %(C)d, RF_H = %(H)d, RF_MAX_GRID = %(max_grid)d };
static int rf_pkg_ready;
static int rf_pkg_sms = 132;
%(modules)s
int rf_pkg_abi_version(void);
int rf_pkg_channels(void);
int rf_pkg_hidden(void);
int rf_pkg_kernel_count(const char *schedule);
int rf_pkg_init(void);
int rf_pkg_launch(const char *schedule, const rf_mlp_args_t *args, void *stream);

RF_PKG_EXPORT int rf_pkg_abi_version(void) { return RF_KERNEL_ABI_VERSION; }
RF_PKG_EXPORT int rf_pkg_channels(void) { return RF_C; }
RF_PKG_EXPORT int rf_pkg_hidden(void) { return RF_H; }

RF_PKG_EXPORT int rf_pkg_kernel_count(const char *schedule) {
    if (schedule == NULL) return -1;
%(counts)s    return -1;
}

RF_PKG_EXPORT int rf_pkg_init(void) {
    int dev = 0;
    if (rf_pkg_ready) return 0;
    rf_pkg_first_error = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return (int)e;
    e = cudaDeviceGetAttribute(&rf_pkg_sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return (int)e;
%(loads)s    if (rf_pkg_first_error != 0) return rf_pkg_first_error;
    rf_pkg_ready = 1;
    return 0;
}

static int rf_pkg_aligned(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Persistent grid: at most per_sm blocks per SM; balanced: as few blocks as give every
 * block the same (maximal) number of tiles, ceil(tiles / ceil(tiles / cap)). */
static int32_t rf_pkg_grid(int64_t rows, int tile_rows, int per_sm, int balanced) {
    int64_t tiles = (rows + tile_rows - 1) / tile_rows;
    int64_t cap = (int64_t)rf_pkg_sms * per_sm;
    if (RF_MAX_GRID > 0 && cap > RF_MAX_GRID) cap = RF_MAX_GRID;
    if (tiles < 1) tiles = 1;
    if (tiles <= cap) return (int32_t)tiles;
    if (balanced) {
        int64_t per_block = (tiles + cap - 1) / cap;
        return (int32_t)((tiles + per_block - 1) / per_block);
    }
    return (int32_t)cap;
}

RF_PKG_EXPORT int rf_pkg_launch(const char *schedule, const rf_mlp_args_t *a, void *stream) {
    if (!rf_pkg_ready) return (int)cudaErrorNotReady;
    if (schedule == NULL || a == NULL) return (int)cudaErrorInvalidValue;
    if (a->rows < 0 || a->rows * (int64_t)(RF_C > RF_H ? RF_C : RF_H) > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    if (!rf_pkg_aligned(a->x) || !rf_pkg_aligned(a->w1) || !rf_pkg_aligned(a->b1) ||
        !rf_pkg_aligned(a->w2) || !rf_pkg_aligned(a->b2) || !rf_pkg_aligned(a->y) ||
        !rf_pkg_aligned(a->h))
        return (int)cudaErrorInvalidValue;
    if (a->x == NULL || a->w1 == NULL || a->b1 == NULL || a->w2 == NULL || a->b2 == NULL ||
        a->y == NULL)
        return (int)cudaErrorInvalidValue;
    int32_t rows = (int32_t)a->rows;
    cudaStream_t st = (cudaStream_t)stream;
%(launches)s    return (int)cudaErrorInvalidValue;
}
"""

LAUNCH_ONE = """    {
        %(p)s_Tensor_mX_t x = {(void *)a->x, {rows}};
        %(p)s_Tensor_mW1_t w1 = {(void *)a->w1};
        %(p)s_Tensor_mB1_t b1 = {(void *)a->b1};
        %(p)s_Tensor_mW2_t w2 = {(void *)a->w2};
        %(p)s_Tensor_mB2_t b2 = {(void *)a->b2};
        %(p)s_Tensor_mH_t h = {a->h, {rows}};
        %(p)s_Tensor_mY_t y = {(void *)a->y, {rows}};
        int32_t grid = rf_pkg_grid(a->rows, %(tm)d, %(per_sm)d, %(balanced)d);
        int32_t r = cute_dsl_%(p)s_wrapper(&%(p)s_mod, &x, &w1, &b1, &w2, &b2, &h, &y, rows,
                                           grid, st);
        if (r != 0) return (int)r;
    }
"""


def write_shim(pkg: str, channels: int, hidden: int, sched_kernels: dict, max_grid: int = 0) -> str:
    includes, modules, counts, loads, launches = [], [], [], [], []
    for sched, kernels in sched_kernels.items():
        counts.append(f'    if (strcmp(schedule, "{sched}") == 0) return {len(kernels)};\n')
        body = [f'    if (strcmp(schedule, "{sched}") == 0) {{\n']
        if any(k["mode"] != "fused_smem" for k in kernels):
            body.append("        if (a->h == NULL) return (int)cudaErrorInvalidValue;\n")
        for k in kernels:
            p = k["name"]
            includes.append(f'#include "kernels/{p}.h"')
            modules.append(f"static {p}_Kernel_Module_t {p}_mod;")
            loads.append(f"    {p}_Kernel_Module_Load(&{p}_mod);\n")
            body.append(
                LAUNCH_ONE
                % {
                    "p": p,
                    "tm": k["tile_rows"],
                    "per_sm": k["blocks_per_sm"],
                    "balanced": int(k.get("grid") == "balanced"),
                }
            )
        body.append("        return 0;\n    }\n")
        launches.append("".join(body))
    src = SHIM_HEAD % {
        "C": channels,
        "H": hidden,
        "max_grid": max_grid,
        "includes": "\n".join(includes),
        "modules": "\n".join(modules),
        "counts": "".join(counts),
        "loads": "".join(loads),
        "launches": "".join(launches),
    }
    path = os.path.join(pkg, "rf_pkg.c")
    with open(path, "w") as f:
        f.write(src)
    return path


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
  -c rf_pkg.c -o rf_pkg.o -I. -I"$RF_INC" -I"$CUDA_HOME/include"
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument(
        "--rows",
        type=int,
        default=0,
        help="expected rows (recorded; --tile-rows auto chooses from it)",
    )
    ap.add_argument(
        "--tile-rows",
        default="auto",
        choices=("16", "32", "64", "auto"),
        help="rows per tile; auto (default): per schedule from --rows, C and H "
        "(choose_tiling, measured on the H200), which also turns on --x-prefetch and "
        "--split-w2 for the fused schedules from 1000 rows up; below 1000 rows (and "
        "without --rows) auto is 16, the former default",
    )
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--schedules",
        default=",".join(SCHEDULES),
        help="comma-separated subset of " + ",".join(SCHEDULES),
    )
    ap.add_argument(
        "--link",
        choices=("so", "objects"),
        default="so",
        help="so: link librowfuse_pkg.so here; objects: leave link.sh for later",
    )
    ap.add_argument(
        "--compress",
        action="store_true",
        help="gzip the IR, PTX and SASS (kernels/<k>.mlir.gz ...) to keep packages small",
    )
    ap.add_argument(
        "--x-prefetch",
        action="store_true",
        help="experimental, not yet run on a GPU: double-buffer the X tile across a "
        "block's row tiles (large row counts)",
    )
    ap.add_argument(
        "--split-w2",
        action="store_true",
        help="experimental (with --x-prefetch, one hidden chunk, fused schedules): W2 and b2 "
        "in their own cp.async group, awaited only before GEMM2 of a block's first tile",
    )
    ap.add_argument(
        "--y-vec2",
        nargs="?",
        const="on",
        default="auto",
        choices=("auto", "on", "off"),
        help="the epilogue stores Y as 8-byte pairs (even C; fused and proj2 kernels); "
        "auto (default): persistent-smem only (H200 run 4: faster at 131072x32x64, "
        "4096x128x512 and 49x48x96); on (or the bare flag): every schedule; off",
    )
    ap.add_argument(
        "--grid",
        choices=("auto", "smem", "regs", "balanced"),
        default="auto",
        help="persistent grid cap per SM: smem (shared memory and threads, the former "
        "rule), regs (also the kernel's registers, read from the cubin), balanced (regs, "
        "then as few blocks as give every block the same number of tiles); auto "
        "(default): balanced for persistent-smem (H200 run 4), smem for the others",
    )
    ap.add_argument(
        "--ring",
        action="store_true",
        help="experimental (persistent-smem with X prefetch): 3 X and 2 H buffers, no "
        "barrier at the end of a tile (2 barriers per tile instead of 3)",
    )
    ap.add_argument(
        "--min-blocks",
        type=int,
        default=0,
        help="experimental: ask ptxas to fit this many blocks per SM in the register file "
        "(launch bounds); 0 (default): no bound",
    )
    ap.add_argument(
        "--max-grid",
        type=int,
        default=0,
        help="for tests: launch at most this many blocks, so that every block walks many "
        "tiles (sanitizer runs of the multi-tile paths at small row counts); 0: no cap",
    )
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)

    sys.path.insert(0, HERE)
    os.environ["CUTE_DSL_ARCH"] = a.arch
    dump_root = tempfile.mkdtemp(prefix="rf_dsl_dump_")
    os.environ["CUTE_DSL_KEEP"] = "ir,ptx,cubin"
    os.environ["CUTE_DSL_DUMP_DIR"] = dump_root

    import rowfuse_kernels as rk  # noqa: PLC0415

    pkg = os.path.abspath(a.out)
    kdir = os.path.join(pkg, "kernels")
    os.makedirs(kdir, exist_ok=True)
    os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)

    scheds = [s for s in a.schedules.split(",") if s]
    for s in scheds:
        if s not in SCHEDULES:
            raise SystemExit(f"build: unknown schedule '{s}' (known: {', '.join(SCHEDULES)})")
    meta = {
        "abi_version": 1,
        "channels": a.channels,
        "hidden": a.hidden,
        "rows": a.rows,
        "rows_dynamic": True,
        "arch": a.arch,
        "generator": "CuTe DSL (nvidia-cutlass-dsl) export_to_c",
        "library": "librowfuse_pkg.so",
        "schedules": {},
        "rejected": {},
    }
    try:
        import importlib.metadata as im  # noqa: PLC0415

        meta["dsl_version"] = im.version("nvidia-cutlass-dsl")
    except Exception:  # noqa: BLE001
        meta["dsl_version"] = "unknown"
    tag = f"c{a.channels}_h{a.hidden}"
    sched_kernels = {}
    for s in scheds:
        kernels = []
        try:
            if a.tile_rows == "auto":
                tm, xpf = choose_tiling(s, a.rows, a.channels, a.hidden)
                split = xpf or a.split_w2
                xpf = xpf or a.x_prefetch
            else:
                tm, xpf, split = int(a.tile_rows), a.x_prefetch, a.split_w2
            for mode in SCHEDULES[s]:
                prefix = f"rf_{tag}_{mode}_t{tm}"
                info = compile_kernel(
                    mode,
                    a.channels,
                    a.hidden,
                    tm,
                    a.arch,
                    prefix,
                    kdir,
                    dump_root,
                    xpf,
                    split,
                    a.y_vec2 == "on" or (a.y_vec2 == "auto" and s == "persistent-smem"),
                    a.grid if a.grid != "auto" else SCHED_GRID.get(s, "smem"),
                    a.ring,
                    a.min_blocks,
                )
                kernels.append(info)
                if not a.quiet:
                    print(
                        f"build: {prefix}: {info['threads']} threads, "
                        f"{info['smem_bytes']} B smem, {info['hidden_chunks']} chunk(s), "
                        f"{info['ptx_mma']} mma, {info['compile_seconds']} s"
                    )
        except rk.ShapeError as e:
            meta["rejected"][s] = str(e)
            print(f"build: {s}: rejected: {e}", file=sys.stderr)
            continue
        sched_kernels[s] = kernels
        meta["schedules"][s] = {
            "kernel_count": len(kernels),
            "tile_rows": tm,
            "tile_rows_chosen": a.tile_rows,
            "kernels": kernels,
        }
    shutil.rmtree(dump_root, ignore_errors=True)
    if not sched_kernels:
        raise SystemExit("build: no schedule could be built for this shape")

    write_shim(pkg, a.channels, a.hidden, sched_kernels, a.max_grid)
    meta["max_grid"] = a.max_grid
    shutil.copy(dsl_runtime_lib(), os.path.join(pkg, "lib", "libcuda_dialect_runtime_static.a"))
    inc = os.path.join(pkg, "include", "rowfuse")
    os.makedirs(inc, exist_ok=True)
    shutil.copy(os.path.join(REPO, "include", "rowfuse", "kernel_abi.h"), inc)
    objects = [k["files"]["object"] for ks in sched_kernels.values() for k in ks]
    link = write_link_script(pkg, objects)
    if a.link == "so":
        subprocess.run(["sh", link, _cuda_home()], check=True)
        meta["library_bytes"] = os.path.getsize(os.path.join(pkg, "librowfuse_pkg.so"))
    if a.compress:
        for ks in sched_kernels.values():
            for k in ks:
                for key in ("mlir", "ptx", "sass"):
                    if key in k["files"]:
                        src = os.path.join(pkg, k["files"][key])
                        with open(src, "rb") as fi, gzip.open(src + ".gz", "wb") as fo:
                            shutil.copyfileobj(fi, fo)
                        os.remove(src)
                        k["files"][key] += ".gz"
    with open(os.path.join(pkg, "kernels.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    if not a.quiet:
        print(f"build: wrote {pkg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
