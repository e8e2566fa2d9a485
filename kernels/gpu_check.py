"""GPU check of AOT-built rowfuse kernel packages (runs on the GPU machine: torch, no DSL).

    python3 kernels/gpu_check.py PKGDIR... [--rows 1,17,49,...] [--time] [--json OUT.json]

Loads each package's librowfuse_pkg.so with ctypes, calls rf_pkg_init, and for every
schedule and row count: poisons Y (and h) with NaN, launches through rf_pkg_launch on a
torch stream, and compares Y with a float64 reference on the CPU that rounds H to fp16
like the kernels do (mixed mode). Fresh random inputs per case (seeded, recorded).
With --time: GPU time of persistent-smem (and the others) at 49 rows from torch.profiler
(CUPTI kernel records of a replayed CUDA graph) and back-to-back launches between events.
Prints a table last; exits non-zero if any case fails.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

import torch

# The kernel ABI's argument struct, as the Python binding defines it (rf_mlp_args_t).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from rowfuse.torch import MlpArgs as Args  # noqa: E402


class Pkg:
    def __init__(self, path: str):
        self.path = path
        self.meta = json.load(open(os.path.join(path, "kernels.json")))
        self.lib = ctypes.CDLL(os.path.join(path, "librowfuse_pkg.so"), mode=os.RTLD_LOCAL)
        self.lib.rf_pkg_launch.argtypes = [ctypes.c_char_p, ctypes.POINTER(Args), ctypes.c_void_p]
        self.lib.rf_pkg_kernel_count.argtypes = [ctypes.c_char_p]
        self.C = self.lib.rf_pkg_channels()
        self.H = self.lib.rf_pkg_hidden()
        rc = self.lib.rf_pkg_init()
        if rc != 0:
            raise RuntimeError(f"{path}: rf_pkg_init returned CUDA error {rc}")

    def launch(self, sched: str, t: dict, rows: int, stream) -> int:
        a = Args(
            t["x"].data_ptr(),
            t["w1"].data_ptr(),
            t["b1"].data_ptr(),
            t["w2"].data_ptr(),
            t["b2"].data_ptr(),
            t["h"].data_ptr(),
            t["y"].data_ptr(),
            rows,
        )
        return self.lib.rf_pkg_launch(sched.encode(), ctypes.byref(a), ctypes.c_void_p(stream))


def make_inputs(rows: int, C: int, H: int, gen: torch.Generator) -> dict:
    def r(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale

    t = {
        "x": r(rows, C).half(),
        "w1": r(C, H, scale=1.0 / C**0.5).half(),
        "b1": r(H, scale=0.1).float(),
        "w2": r(H, C, scale=1.0 / H**0.5).half(),
        "b2": r(C, scale=0.1).float(),
    }
    return t


def reference(t: dict, device: str = "cpu") -> torch.Tensor:
    """float64 reference (H rounded to fp16 like the kernels); on the GPU for large
    shapes (still float64 throughout), returned on the CPU."""
    x = t["x"].to(device).double()
    w1, b1 = t["w1"].to(device).double(), t["b1"].to(device).double()
    w2, b2 = t["w2"].to(device).double(), t["b2"].to(device).double()
    h = torch.relu(x @ w1 + b1).half().double()
    return torch.relu(h @ w2 + b2 + x).cpu()


def check_case(pkg: Pkg, sched: str, rows: int, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    host = make_inputs(rows, pkg.C, pkg.H, gen)
    ref = reference(host, "cuda" if rows * pkg.C * pkg.H > 1e8 else "cpu")
    dev = {k: v.cuda() for k, v in host.items()}
    # Y and h are poisoned with NaN and have 16 spare rows that must stay NaN (a write
    # past `rows` shows up there)
    dev["h"] = torch.full((rows + 16, pkg.H), float("nan"), dtype=torch.float16, device="cuda")
    dev["y"] = torch.full((rows + 16, pkg.C), float("nan"), dtype=torch.float32, device="cuda")
    s = torch.cuda.current_stream()
    rc = pkg.launch(sched, dev, rows, s.cuda_stream)
    torch.cuda.synchronize()
    res = {
        "pkg": os.path.basename(pkg.path),
        "C": pkg.C,
        "H": pkg.H,
        "schedule": sched,
        "rows": rows,
        "seed": seed,
        "rc": rc,
    }
    if rc != 0:
        res.update(ok=False, why=f"launch returned {rc}")
        return res
    y = dev["y"][:rows].double().cpu()
    finite = bool(torch.isfinite(y).all())
    err = (y - ref).abs()
    max_abs = float(err.max()) if rows else 0.0
    rel_l2 = float(err.norm() / max(ref.norm(), 1e-30)) if rows else 0.0
    guard_ok = bool(torch.isnan(dev["y"][rows:]).all()) and bool(torch.isnan(dev["h"][rows:]).all())
    ok = finite and guard_ok and rel_l2 < 2e-3 and max_abs < 5e-2
    res.update(ok=ok, finite=finite, max_abs=max_abs, rel_l2=rel_l2, guard_ok=guard_ok)
    return res


def time_schedule(pkg: Pkg, sched: str, rows: int, reps: int = 2000, spans_n: int = 200) -> dict:
    gen = torch.Generator().manual_seed(1234)
    dev = {k: v.cuda() for k, v in make_inputs(rows, pkg.C, pkg.H, gen).items()}
    dev["h"] = torch.empty((rows, pkg.H), dtype=torch.float16, device="cuda")
    dev["y"] = torch.empty((rows, pkg.C), dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(20):
            pkg.launch(sched, dev, rows, s.cuda_stream)
    torch.cuda.synchronize()
    # back-to-back eager launches between two events
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(s):
        e0.record(s)
        for _ in range(reps):
            pkg.launch(sched, dev, rows, s.cuda_stream)
        e1.record(s)
    torch.cuda.synchronize()
    eager_us = e0.elapsed_time(e1) * 1000.0 / reps
    # graph of one launch, replayed back to back
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        pkg.launch(sched, dev, rows, s.cuda_stream)
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
    e0.record()
    for _ in range(reps):
        g.replay()
    e1.record()
    torch.cuda.synchronize()
    graph_us = e0.elapsed_time(e1) * 1000.0 / reps
    # CUPTI kernel records (torch.profiler): per-replay GPU span = first start .. last end
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    n = spans_n
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            g.replay()
            torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    evs = sorted(evs, key=lambda e: e.time_range.start)
    nk = pkg.lib.rf_pkg_kernel_count(sched.encode())
    spans = []
    names = sorted({e.name for e in evs})
    for i in range(0, len(evs) - nk + 1, nk):
        grp = evs[i : i + nk]
        spans.append(grp[-1].time_range.end - grp[0].time_range.start)
    spans.sort()
    med = spans[len(spans) // 2] if spans else float("nan")
    p10 = spans[len(spans) // 10] if spans else float("nan")
    p90 = spans[(len(spans) * 9) // 10] if spans else float("nan")
    first = pkg.meta["schedules"][sched]["kernels"][0]
    return {
        "pkg": os.path.basename(pkg.path),
        "schedule": sched,
        "rows": rows,
        "tile_rows": first["tile_rows"],
        "x_prefetch": bool(first.get("x_prefetch", False)),
        "split_w2": bool(first.get("split_w2", False)),
        "C": pkg.C,
        "H": pkg.H,
        "gpu_span_us_median": med,
        "gpu_span_us_p10": p10,
        "gpu_span_us_p90": p90,
        "n_spans": len(spans),
        "kernel_names": names,
        "eager_back_to_back_us": eager_us,
        "graph_back_to_back_us": graph_us,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pkgs", nargs="+")
    ap.add_argument("--rows", default="1,15,16,17,49,100,1000,5000")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--time-rows", type=int, default=49)
    ap.add_argument(
        "--time-shapes",
        default="49x48x96,64x64x128,1000x96x200,4096x128x512,131072x32x64,8192x512x2048",
        help="rowsxCxH shapes also timed on the matching 16-row-tile package",
    )
    ap.add_argument(
        "--all-tiles",
        action="store_true",
        help="time the --time-shapes on every matching package (any tile rows, X prefetch) "
        "and check correctness at those row counts first; skip the --time-rows timing",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="--all-tiles timing with 100 back-to-back launches and 50 CUPTI spans",
    )
    ap.add_argument("--check-shapes", action="store_true", help="also check at --time-shapes")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.cuda.init()
    results, timings, failures = [], [], 0
    seed = int(time.time()) % 100000
    print(
        f"gpu_check: {torch.cuda.get_device_name()} torch {torch.__version__} seed0 {seed}",
        flush=True,
    )
    pkgs = []
    for p in a.pkgs:
        try:
            pkgs.append(Pkg(p))
        except Exception as e:  # noqa: BLE001
            print(f"LOAD FAIL {p}: {e}", flush=True)
            failures += 1
    for pkg in pkgs:
        for sched in pkg.meta["schedules"]:
            row_list = [int(r) for r in a.rows.split(",") if r]
            if a.all_tiles or a.check_shapes:
                for shape in a.time_shapes.split(","):
                    rows, c, h = (int(v) for v in shape.split("x"))
                    if (pkg.C, pkg.H) == (c, h) and rows not in row_list:
                        row_list.append(rows)
            for rows in row_list:
                if rows * pkg.C * pkg.H > 3e9 and not (a.all_tiles or a.check_shapes):
                    continue  # keep the CPU float64 reference quick
                seed += 1
                try:
                    r = check_case(pkg, sched, rows, seed)
                except Exception as e:  # noqa: BLE001
                    r = {
                        "pkg": os.path.basename(pkg.path),
                        "schedule": sched,
                        "rows": rows,
                        "ok": False,
                        "why": repr(e),
                    }
                results.append(r)
                failures += 0 if r["ok"] else 1
                print(("ok  " if r["ok"] else "FAIL") + " " + json.dumps(r), flush=True)
    if a.json:  # partial results survive a time limit
        with open(a.json, "w") as f:
            json.dump({"results": results, "timings": timings}, f, indent=1)
    if a.time:
        for pkg in pkgs if not a.all_tiles else []:
            for sched in pkg.meta["schedules"]:
                try:
                    t = time_schedule(pkg, sched, a.time_rows)
                except Exception as e:  # noqa: BLE001
                    t = {"pkg": os.path.basename(pkg.path), "schedule": sched, "error": repr(e)}
                timings.append(t)
                print("time " + json.dumps(t), flush=True)
        for shape in a.time_shapes.split(","):
            rows, c, h = (int(v) for v in shape.split("x"))
            for pkg in pkgs:
                if (pkg.C, pkg.H) != (c, h) or rows == a.time_rows:
                    continue
                first = pkg.meta["schedules"][next(iter(pkg.meta["schedules"]))]
                if first["tile_rows"] != 16 and not a.all_tiles:
                    continue
                for sched in pkg.meta["schedules"]:
                    try:
                        if a.quick:
                            t = time_schedule(pkg, sched, rows, reps=100, spans_n=50)
                        else:
                            t = time_schedule(pkg, sched, rows, reps=200)
                    except Exception as e:  # noqa: BLE001
                        t = {"pkg": os.path.basename(pkg.path), "schedule": sched, "error": repr(e)}
                    timings.append(t)
                    print("time " + json.dumps(t), flush=True)
                if a.json:  # partial results survive a time limit
                    with open(a.json, "w") as f:
                        json.dump({"results": results, "timings": timings}, f, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {"device": torch.cuda.get_device_name(), "results": results, "timings": timings},
                f,
                indent=1,
            )
    print("\n| package | schedule | cases | failed | worst rel_l2 | worst max_abs |")
    print("|---|---|---|---|---|---|")
    groups = {}
    for r in results:
        groups.setdefault((r["pkg"], r["schedule"]), []).append(r)
    for (p, s), rs in groups.items():
        bad = [r for r in rs if not r["ok"]]
        wl2 = max((r.get("rel_l2", float("nan")) for r in rs), default=0)
        wab = max((r.get("max_abs", float("nan")) for r in rs), default=0)
        print(f"| {p} | {s} | {len(rs)} | {len(bad)} | {wl2:.2e} | {wab:.2e} |")
    if timings:
        print(
            "\n| package | schedule | rows | tile | xpf | GPU span med (p10-p90) us "
            "| graph b2b us | eager b2b us |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for t in timings:
            if "error" in t:
                print(f"| {t['pkg']} | {t['schedule']} | - | error {t['error'][:60]} | | |")
                continue
            print(
                f"| {t['pkg']} | {t['schedule']} | {t['rows']} | {t['tile_rows']} | "
                f"{int(t['x_prefetch'])} | {t['gpu_span_us_median']:.2f} "
                f"({t['gpu_span_us_p10']:.2f}-{t['gpu_span_us_p90']:.2f}) | "
                f"{t['graph_back_to_back_us']:.2f} | "
                f"{t['eager_back_to_back_us']:.2f} |"
            )
    print(f"\ngpu_check: {len(results)} cases, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
