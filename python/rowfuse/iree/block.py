"""The residual MLP block through IREE (`rowfuse iree`), checked against the CPU reference.

    python -m rowfuse.iree.block check DIR... [--driver local-task|cuda] [--trials 3]
        [--model MODEL.onnx] [-o check.json]

Each DIR is a `rowfuse iree` output folder: the weights are read back from its
contract.mlir (the hex constants the module was compiled with), its module.vmfb runs
`main(X)` through the IREE runtime on fresh random rows (fp16; seeds from the system's
random source, recorded), and the output is compared with the CPU reference interpreter in
the plan's mixed precision (rowfuse.capi.clib.reference) under two rules:

- the one comparison of rowfuse/mlp.h (rowfuse.capi.clib.compare), and
- a per-element bound derived for this block, |y - ref| <= B (`derived_bound`: the C
  library's rf_mlp_error_bound with fp32 sums in any order, src/harness/README.md): IREE and
  the reference differ only in the order of fp32 accumulation, in fp32 roundings of the
  bias and residual adds, and, where those move a hidden value across an fp16 rounding
  boundary, in one fp16 step of that H element, which the second projection carries to Y;
- H rounded to fp16: over the positive outputs, the median |y - ref| at most a tenth of
  the median distance to the block with H kept unrounded (`unrounded_block`), a
  difference the bound cannot always see. (The median ignores the few elements an fp16
  flip moves; on 600 random inputs the ratio was over 2500 for IREE's modules.)

With --model, the reference is also taken from the ONNX model itself (`rowfuse run --cpu
--precision mixed`, $RF_BIN or the installed rowfuse) and must equal the contract's reference,
which checks the weights the C driver wrote into the contract.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import numpy as np

from rowfuse.capi import locate

# ---------------------------------------------------------------- the contract's weights

_CONST = re.compile(
    r'%(w1|b1|w2|b2) = arith\.constant dense<"0x([0-9A-Fa-f]+)"> : tensor<([0-9x]+)x(f16|f32)>'
)
_ARG = re.compile(r"@main\(%x: tensor<(\d+)x(\d+)xf16>")


def read_contract(path: str) -> dict:
    """rows and the weights W1, b1, W2, b2 (numpy, as compiled) of a contract.mlir written by
    rf_mlp_contract_mlir_write."""
    with open(path) as f:
        text = f.read()
    m = _ARG.search(text)
    if not m:
        raise ValueError(f"{path}: no @main(%x: tensor<RxCxf16>) found")
    out = {"rows": int(m.group(1)), "channels": int(m.group(2))}
    for name, hexdata, dims, elem in _CONST.findall(text):
        shape = tuple(int(d) for d in dims.split("x"))
        dtype = np.dtype("<f2" if elem == "f16" else "<f4")
        out[name] = np.frombuffer(bytes.fromhex(hexdata), dtype=dtype).reshape(shape).copy()
    missing = {"w1", "b1", "w2", "b2"} - out.keys()
    if missing:
        raise ValueError(f"{path}: constants {sorted(missing)} not found")
    return out


# ---------------------------------------------------------------- the derived bound


def unrounded_block(x, w1, b1, w2, b2) -> np.ndarray:
    """The block in fp64 with H NOT rounded to fp16: what an implementation that keeps H in
    fp32 approximates. The bound alone does not separate it from the mixed reference at
    every shape (its differences are of the size of the fp16 flips the bound allows), so
    `check_folder` also requires the output to be far closer to the mixed reference."""
    x, w1, w2 = (np.asarray(a, np.float16).astype(np.float64) for a in (x, w1, w2))
    h = np.maximum(x @ w1 + np.asarray(b1, np.float64), 0.0)
    return np.maximum(h @ w2 + np.asarray(b2, np.float64) + x, 0.0)


def h_rounded(y, ref, alt) -> bool:
    """Over the positive outputs, is y at least 10x closer (median) to the mixed reference
    than to the unrounded-H block?"""
    pos = ref > 0
    if not pos.any():
        return True
    dy = np.abs(np.asarray(y, np.float64) - ref)[pos]
    return bool(10.0 * np.median(dy) <= np.median(np.abs(np.asarray(y, np.float64) - alt)[pos]))


def derived_bound(x, w1, b1, w2, b2, dx=None) -> np.ndarray:
    """Per element of Y, the largest |y - ref| two correct mixed-precision implementations
    of the block can differ by, for fp32 sums in any order (see the module docstring). x,
    w1, w2 fp16; b1, b2 fp32. dx (optional, >= 0, x's shape): how far the other
    implementation's input may be from x elementwise (an upstream fp16 rounding that may
    fall the other way: rowfuse.iree.model); it is carried through W1 into the H flips, and
    straight through the residual. The C library computes it (rf_mlp_error_bound), the
    same function every GPU gate uses with the tensor cores' accumulation model."""
    from rowfuse.capi import clib

    return clib.error_bound(x, w1, b1, w2, b2, dx=dx, any_order=True)


# ---------------------------------------------------------------- running a module


def load(path: str, driver: str):
    from rowfuse.lab import iree_run

    return iree_run.load(path, driver)


def reference(x, w) -> np.ndarray:
    from rowfuse.capi import clib

    return clib.reference(x, w["w1"], w["b1"], w["w2"], w["b2"], mixed=True)


def model_reference(model: str, x16: np.ndarray) -> np.ndarray:
    """`rowfuse run MODEL --cpu --precision mixed` on x (the interpreter on the ONNX graph)."""
    rowfuse = locate.cli()
    with tempfile.TemporaryDirectory() as tmp:
        xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(xin, x16.astype(np.float32))
        cmd = [rowfuse, "run", model, "--input", xin, "--output", yout, "--cpu"]
        subprocess.run(cmd + ["--precision", "mixed"], check=True, capture_output=True)
        return np.load(yout).astype(np.float32)


def one_comparison(y, x, w, ref) -> dict:
    """rowfuse/mlp.h's one comparison (rowfuse.capi.clib.compare). Newer libraries carry its error
    model with a case (clib.case_of: the per-element allowance and the step); older ones
    take the reference alone."""
    from rowfuse.capi import clib

    if hasattr(clib, "case_of"):
        return clib.compare(y, clib.case_of(x, w["w1"], w["b1"], w["w2"], w["b2"]))
    return clib.compare(y, ref, ref.shape[1])


def check_output(y, x, w) -> dict:
    """Both rules (and the H-rounding test) on one output y for input x; w: read_contract."""
    y = np.asarray(y, dtype=np.float32)
    ref = reference(x, w)
    bound = derived_bound(x, w["w1"], w["b1"], w["w2"], w["b2"])
    err = np.abs(y.astype(np.float64) - ref.astype(np.float64))
    worst = np.unravel_index(int(np.argmax(err / bound)), err.shape)
    alt = unrounded_block(x, w["w1"], w["b1"], w["w2"], w["b2"])
    pos = ref > 0  # the relu's zeros agree either way
    t = {
        "compare": one_comparison(y, x, w, ref),
        "max_abs_err": float(err.max()),
        "max_err_over_bound": float((err / bound).max()),
        "bound_at_worst": float(bound[worst]),
        "bound_median": float(np.median(bound)),
        "within_bound": bool(np.all(err <= bound) and np.all(np.isfinite(y))),
        "median_err_vs_mixed": float(np.median(err[pos])) if pos.any() else 0.0,
        "median_err_vs_unrounded_h": float(np.median(np.abs(y - alt)[pos])) if pos.any() else 0.0,
        "h_rounded": h_rounded(y, ref, alt),
    }
    t["passed"] = t["compare"]["passed"] and t["within_bound"] and t["h_rounded"]
    return t


def random_rows(rows: int, channels: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (rows, channels)).astype(np.float16)


def check_folder(folder: str, driver: str, trials: int, model: str | None = None) -> dict:
    """Runs DIR/module.vmfb on `trials` fresh inputs; the rules on each."""
    w = read_contract(os.path.join(folder, "contract.mlir"))
    rows, channels = w["rows"], w["channels"]
    module = load(os.path.join(folder, "module.vmfb"), driver)
    res = {"folder": folder, "driver": driver, "rows": rows, "channels": channels}
    res["hidden"] = int(w["w1"].shape[1])
    res["trials"], ok = [], True
    for _ in range(trials):
        seed = random.SystemRandom().randrange(2**31)
        x = random_rows(rows, channels, seed)
        y = module(module.to_device(x)).to_host()
        t = {"seed": seed, **check_output(y, x, w)}
        if model:
            mref = model_reference(model, x)
            t["model_ref_max_abs_diff"] = float(np.abs(mref - reference(x, w)).max())
            t["model_ref_equal"] = bool(np.array_equal(mref, reference(x, w)))
            t["passed"] = t["passed"] and t["model_ref_equal"]
        ok = ok and t["passed"]
        res["trials"].append(t)
    res["passed"] = ok
    return res


def _summary_line(r: dict) -> str:
    worst = max(r["trials"], key=lambda t: t["max_err_over_bound"])
    line = (
        f"{r['folder']}: {r['rows']}x{r['channels']}x{r['hidden']} on {r['driver']}: "
        f"rel L2 {worst['compare']['rel_l2']:.2e}, max |err| {worst['max_abs_err']:.2e} "
        f"= {worst['max_err_over_bound']:.3f} of the derived bound, median |err| "
        f"{worst['median_err_vs_mixed']:.1e} (vs {worst['median_err_vs_unrounded_h']:.1e} "
        f"to the unrounded-H block)"
    )
    if "model_ref_equal" in worst:
        line += ", model reference " + ("equal" if worst["model_ref_equal"] else "DIFFERS")
    return line + (" ok" if r["passed"] else " FAILED")


def main(argv=None) -> int:
    doc = __doc__.split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m rowfuse.iree.block", description=doc)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="run `rowfuse iree` folders, compare with the reference")
    c.add_argument("folders", nargs="+")
    c.add_argument("--driver", default="local-task")
    c.add_argument("--trials", type=int, default=3)
    c.add_argument("--model", help="also compare with the interpreter on this ONNX model")
    c.add_argument("-o", "--output")
    args = p.parse_args(argv)
    results = [check_folder(f, args.driver, args.trials, args.model) for f in args.folders]
    for r in results:
        print(_summary_line(r))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"schema": "rowfuse-iree-check/1", "results": results}, f, indent=1)
            f.write("\n")
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
