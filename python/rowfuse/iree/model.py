"""A model bigger than the block, through IREE as one module: the lab's attention (IREE
compiles it stock), then a token residual MLP that rowfuse verifies and schedules (its
region is what rowfuse-opt produced), linked by a call and run by the IREE runtime.

    python -m rowfuse.iree.model build -o DIR [--device llvm-cpu|cuda] [--schedule S|stock]
        [--kernels extern|codegen] [--plant-fault zero-b2]
    python -m rowfuse.iree.model check DIR... [--driver local-task|cuda] [--trials 3]
        [-o check.json]
    python -m rowfuse.iree.model gpu --carry DIR [--iree-mode streams|graphs] -o run.json

The model (`make`): x [64, 64] fp32 -> attention (rowfuse.lab.models' Attention, the lab's
weights) -> tokens rounded to fp16 -> the residual MLP block 64x64x128 in rowfuse's
precision (fp16 weights, fp16 H, fp32 accumulation, bias, residual and output). The fp16
tokens are part of the model's definition: the block takes fp16 rows.

`build` keeps every stage in DIR:

    weights.npz          the model's weights (the check and the GPU run rebuild it from them)
    block.onnx           the block exported alone (rowfuse.export), which rowfuse verifies
    block/               `rowfuse iree block.onnx --function rowfuse_block`: contract.mlir,
                         scheduled.mlir, iree_input.mlir (the block as a private function,
                         rowfuse-opt's output), package/ and adapted PTX for extern kernels
    stock.torch.mlir     the rest, attention -> fp16 tokens, through torch.export and
                         iree-turbine (IREE compiles it stock)
    model.mlir           the link: stock main's tokens go through torch_c.to_builtin_tensor to
                         `func.call @rowfuse_block`, whose result is main's; rowfuse-opt's
                         function copied in verbatim (IREE's own IR API, iree.compiler.ir)
    model.flow.mlir      iree-compile --compile-to=flow: the dispatches
    module.vmfb, splice.json   the module; the check that the splice is real

splice.json: the dispatches that read the block's weights (W1 [C, H] or W2 [H, C] fp16)
must be the rowfuse schedule's kernels: with kernels=extern, dispatches of the extern
executable whose exports are the package's kernel names; with codegen, as many dispatches
as the schedule has kernels (persistent-smem: one dispatch reading both W1 and W2, which
IREE's own fusion of the same ops never forms: the `stock` build has two). `--schedule
stock` links the block as linalg instead (IREE's own lowering), for that comparison.

`--plant-fault zero-b2` zeroes b2 inside the linked rowfuse function (tests only): the check
must fail it.

The check (`check_output`) on fresh inputs against the same model in PyTorch fp64 (the
fp16 roundings where the model has them):
- a per-element bound on |y - ref|: the attention output's fp32 error is bounded per element
  by the lab's tolerance (rowfuse.lab.numerics: 4 u sqrt(sum K) over the attention's
  contractions) times the magnitudes that enter its last contraction, (P |V|) |Wo| + |bo|;
  a token can then round to the other fp16 neighbour only where an fp16 rounding boundary
  lies that close, by one fp16 ulp; those token differences are carried through the block
  with rowfuse.iree.block.derived_bound (its H flips, sum orders and roundings);
- H rounded to fp16 (rowfuse.iree.block.h_rounded: the median over positive outputs).
The relative L2 error against PyTorch fp64 and fp32 is reported beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

from rowfuse.capi import locate
from rowfuse.iree import block as iree_block

TOKENS = 64
HIDDEN = 128
BLOCK_SEED = 1
FUNCTION = "rowfuse_block"
FAULTS = ("zero-b2",)
SCHEMA = "rowfuse-iree-model/1"


# ---------------------------------------------------------------- the model


def _round16(t):
    import torch

    return t.to(torch.float16).to(t.dtype)


def make():
    """The model with fixed-seed weights: the lab's attention, the block's weights rounded
    to fp16 values (what rowfuse compiles them to)."""
    import torch

    from rowfuse.lab import models

    class AttentionTokenMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = models.build("attention")
            torch.manual_seed(BLOCK_SEED)
            self.fc1 = torch.nn.Linear(models.WIDTH, HIDDEN)
            self.fc2 = torch.nn.Linear(HIDDEN, models.WIDTH)
            with torch.no_grad():
                for p in (self.fc1.weight, self.fc2.weight):
                    p.copy_(_round16(p))

        def stock(self, x):
            """The part IREE compiles: attention, tokens rounded to fp16."""
            return self.attn(x).to(torch.float16)

        def block(self, t, round_h=True):
            """The residual MLP on fp16-valued tokens t, in t's dtype, H rounded to fp16."""
            h = torch.relu(self.fc1(t))
            h = _round16(h) if round_h else h
            return torch.relu(self.fc2(h) + t)

        def forward(self, x):
            return self.block(_round16(self.attn(x)))

    return AttentionTokenMLP().float().eval()


class _Block:
    """The block as an nn.Module of its own (fc1, fc2 shared), for rowfuse.export."""

    @staticmethod
    def of(model):
        import torch

        class ResidualMLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = model.fc1, model.fc2

            def forward(self, x):
                return torch.relu(self.fc2(torch.relu(self.fc1(x))) + x)

        return ResidualMLP().eval()


class _Stock:
    @staticmethod
    def of(model):
        import torch

        class Stock(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, x):
                return self.m.stock(x)

        return Stock().eval()


def save_weights(model, path: str) -> None:
    np.savez(path, **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()})


def load_model(path: str):
    import torch

    model = make()
    with np.load(path) as f:
        model.load_state_dict({k: torch.from_numpy(f[k]) for k in f.files})
    return model


def make_input(seed: int) -> np.ndarray:
    from rowfuse.lab import models

    return models.make_input("attention", seed).numpy()


# ---------------------------------------------------------------- build


class BuildError(RuntimeError):
    """A stage failed; the message names it and the tool's own error."""


def _run(cmd: list[str], what: str) -> str:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-12:]
        raise BuildError(f"{what} failed (exit {p.returncode}):\n" + "\n".join(tail))
    return p.stdout


def export_stock(model, out: str) -> str:
    """torch.export + iree-turbine on the stock part -> out/stock.torch.mlir."""
    import torch

    from rowfuse.lab import stages

    with torch.no_grad():
        ep = torch.export.export(_Stock.of(model), (torch.from_numpy(make_input(0)),))
    return stages.import_torch_mlir(ep, out, "stock.torch.mlir")


def _sym(op) -> str | None:
    from iree.compiler import ir

    a = op.attributes
    return ir.StringAttr(a["sym_name"]).value if "sym_name" in a else None


def link(stock_path: str, block_path: str, out_path: str, fault: str | None = None) -> None:
    """The stock module with its result passed through the rowfuse function: main's
    returned tokens -> torch_c.to_builtin_tensor -> func.call @FUNCTION ->
    torch_c.from_builtin_tensor -> returned; FUNCTION copied from rowfuse-opt's output."""
    from iree.compiler import ir

    with ir.Context(), ir.Location.unknown():
        stock = ir.Module.parse(open(stock_path).read())
        block = ir.Module.parse(open(block_path).read())
        funcs = {_sym(op): op for op in block.body.operations if op.operation.name == "func.func"}
        if FUNCTION not in funcs:
            raise BuildError(f"{block_path}: no func.func @{FUNCTION} (rowfuse iree --function)")
        fn = funcs[FUNCTION]
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        (tin,), (tout,) = ftype.inputs, ftype.results
        main = next(op for op in stock.body.operations if _sym(op) == "main")
        body = main.regions[0].blocks[0]
        ret = body.operations[len(body.operations) - 1]
        ip = ir.InsertionPoint(ret)
        tokens = ir.Operation.create(
            "torch_c.to_builtin_tensor", results=[tin], operands=[ret.operands[0]], ip=ip
        )
        callee = ir.FlatSymbolRefAttr.get(FUNCTION)
        call = ir.Operation.create(
            "func.call", results=[tout], operands=[tokens.result], attributes={"callee": callee}
        )
        ip.insert(call)
        shape = ",".join(str(d) for d in ir.RankedTensorType(tout).shape)
        vt = ir.Type.parse(f"!torch.vtensor<[{shape}],f32>")
        y = ir.Operation.create(
            "torch_c.from_builtin_tensor", results=[vt], operands=[call.result], ip=ip
        )
        ret.operands[0] = y.result
        mtype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(mtype.inputs), [vt])
        )
        if fault == "zero-b2":
            _zero_b2(fn, ir)
        elif fault:
            raise BuildError(f"unknown fault '{fault}' (known: {', '.join(FAULTS)})")
        ir.InsertionPoint(stock.body).insert(fn.detach_from_parent())
        if not stock.operation.verify():
            raise BuildError("the linked module does not verify")
        with open(out_path, "w") as f:
            f.write(str(stock))


def _zero_b2(fn, ir) -> None:
    """The planted fault: b2 (the block's one [C] fp32 constant) set to zeros."""
    (tout,) = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results
    channels = ir.RankedTensorType(tout).shape[1]
    want = ir.RankedTensorType.get([channels], ir.F32Type.get())
    hits = []

    def visit(op):
        if op.name == "arith.constant" and op.results[0].type == want:
            hits.append(op)
        return ir.WalkResult.ADVANCE

    fn.operation.walk(visit)
    if len(hits) != 1:
        raise BuildError(f"zero-b2: {len(hits)} constants of type {want}, expected 1 (b2)")
    hits[0].attributes["value"] = ir.DenseElementsAttr.get_splat(
        want, ir.FloatAttr.get(ir.F32Type.get(), 0.0)
    )


# %r = flow.dispatch @EXECUTABLE(::@VARIANT)?::@EXPORT([workload])?(operands) : (types)
_DISPATCH = re.compile(
    r"= flow\.dispatch @([\w$.-]+)(?:::@[\w$.-]+)?::@([\w$.-]+)(?:\[[^\]]*\])?\(.*?\) : \(([^)]*)\)"
)
_KERNEL = re.compile(r'rowfuse\.kernel "(\w+)"')


def splice_evidence(flow_text: str, scheduled: str | None, channels: int, hidden: int) -> dict:
    """The dispatches of the flow phase and which of them read the block's weights; ok when
    those are the rowfuse schedule's kernels (see the module docstring)."""
    w1, w2 = f"tensor<{channels}x{hidden}xf16>", f"tensor<{hidden}x{channels}xf16>"
    dispatches = [
        {"executable": e, "export": x, "w1": w1 in types, "w2": w2 in types}
        for e, x, types in _DISPATCH.findall(flow_text)
    ]
    block = [d for d in dispatches if d["w1"] or d["w2"]]
    kernels = _KERNEL.findall(open(scheduled).read()) if scheduled else []
    res = {"dispatches": len(dispatches), "block_dispatches": block, "kernels": kernels}
    if not kernels:
        res["ok"] = True  # stock: IREE's own lowering, nothing to prove
        res["why"] = "stock: the block lowered by IREE itself"
        return res
    extern = all(d["executable"].startswith("extern") for d in block)
    if extern:
        names = [d["export"] for d in block]
        res["ok"] = bool(block) and names == kernels
        res["why"] = f"extern dispatches {names} vs the schedule's kernels {kernels}"
    else:
        res["ok"] = len(block) == len(kernels) and (
            len(kernels) > 1 or (block[0]["w1"] and block[0]["w2"])
        )
        res["why"] = (
            f"{len(block)} IREE-generated dispatch(es) read the block's weights, the schedule "
            f"has {len(kernels)} kernel(s)"
            + ("; one dispatch reads both W1 and W2" if len(kernels) == 1 else "")
        )
    return res


def build(
    out: str,
    device: str = "llvm-cpu",
    schedule: str = "persistent-smem",
    kernels: str | None = None,
    fault: str | None = None,
    say=lambda m: None,
) -> dict:
    """Builds DIR (replacing its files); returns splice.json's content."""
    import torch

    from rowfuse import export
    from rowfuse.lab import stages

    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = make()
    save_weights(model, os.path.join(out, "weights.npz"))
    say("export the block (rowfuse.export)")
    export.export(_Block.of(model), None, TOKENS, os.path.join(out, "block.onnx"))
    rowfuse = locate.cli()
    cmd = [rowfuse, "iree", os.path.join(out, "block.onnx"), "--schedule", schedule]
    cmd += ["--device", device, "--function", FUNCTION, "-o", os.path.join(out, "block")]
    cmd += ["--kernels", kernels] if kernels else []
    say(" ".join(cmd[1:]))
    _run(cmd, "rowfuse iree")
    say("export the stock part (torch.export, iree-turbine)")
    stock = export_stock(model, out)
    say("link")
    linked = os.path.join(out, "model.mlir")
    link(stock, os.path.join(out, "block", "iree_input.mlir"), linked, fault)
    tool = stages.iree_compile_path()
    flags = stages.target_flags(device)
    say(f"iree-compile ({device})")
    flow = os.path.join(out, "model.flow.mlir")
    _run([tool, linked, *flags, "--compile-to=flow", "-o", flow], "iree-compile (flow)")
    _run([tool, linked, *flags, "-o", os.path.join(out, "module.vmfb")], "iree-compile")
    scheduled = os.path.join(out, "block", "scheduled.mlir")
    with open(flow) as f:
        ev = splice_evidence(
            f.read(),
            scheduled if schedule != "stock" else None,
            model.fc1.in_features,
            HIDDEN,
        )
    with open(os.path.join(out, "module.vmfb"), "rb") as f:
        blob = f.read()
    ev["kernels_in_vmfb"] = {k: k.encode() in blob for k in ev["kernels"]}
    if ev["block_dispatches"] and ev["block_dispatches"][0]["executable"].startswith("extern"):
        ev["ok"] = ev["ok"] and all(ev["kernels_in_vmfb"].values())
    ev.update({"device": device, "schedule": schedule, "kernels_mode": kernels, "fault": fault})
    with open(os.path.join(out, "splice.json"), "w") as f:
        json.dump(ev, f, indent=1)
        f.write("\n")
    if not ev["ok"]:
        raise BuildError(f"the splice is not the rowfuse schedule's: {ev['why']}")
    return ev


# ---------------------------------------------------------------- check


def attention_bound(model64, x64):
    """fp64 attention output and the per-element bound on an fp32 implementation's error."""
    import torch

    from rowfuse.lab import models, numerics

    a = model64.attn
    with torch.no_grad():
        q, k, v = a.q(x64), a.k(x64), a.v(x64)
        p = torch.softmax(q @ k.T / math.sqrt(models.WIDTH), dim=-1)
        out = a.o(p @ v)
        scale = (p @ v.abs()) @ a.o.weight.abs().T + a.o.bias.abs()
    tol = numerics.tolerance(models.contraction_lengths("attention"))
    return out.numpy(), tol * scale.numpy()


def token_flips(a64: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Per token element, how far two fp16 roundings of values within err of a64 can be
    apart: one fp16 ulp where a rounding boundary lies within err, else 0."""
    mag = np.abs(a64)
    h = mag.astype(np.float16)
    lo = np.nextafter(h, np.float16(-np.inf)).astype(np.float64)
    hi = np.nextafter(h, np.float16(np.inf)).astype(np.float64)
    h64 = h.astype(np.float64)
    dist = np.minimum(mag - (lo + h64) / 2.0, (h64 + hi) / 2.0 - mag)
    ulp = np.maximum(hi - h64, h64 - lo)
    return np.where(dist <= err, ulp, 0.0)


def reference(model, x: np.ndarray) -> dict:
    """PyTorch fp64 and fp32 outputs, the unrounded-H alternative, and the bound."""
    import copy

    import torch

    m64 = copy.deepcopy(model).double()
    x64 = torch.from_numpy(x).double()
    with torch.no_grad():
        a64, ea = attention_bound(m64, x64)
        t64 = _round16(torch.from_numpy(a64))
        y64 = m64.block(t64).numpy()
        alt = m64.block(t64, round_h=False).numpy()
        y32 = model(torch.from_numpy(x).float()).numpy()
    dx = token_flips(a64, ea)
    w = {
        "w1": model.fc1.weight.detach().numpy().T.astype(np.float16),
        "b1": model.fc1.bias.detach().numpy(),
        "w2": model.fc2.weight.detach().numpy().T.astype(np.float16),
        "b2": model.fc2.bias.detach().numpy(),
    }
    x16 = t64.numpy().astype(np.float16)
    bound = iree_block.derived_bound(x16, w["w1"], w["b1"], w["w2"], w["b2"], dx=dx)
    return {"y64": y64, "y32": y32, "alt": alt, "bound": bound, "token_flips": int((dx > 0).sum())}


def check_output(y, ref: dict) -> dict:
    from rowfuse.lab import numerics

    y = np.asarray(y, dtype=np.float64)
    err = np.abs(y - ref["y64"])
    ratio = err / ref["bound"]
    worst = np.unravel_index(int(np.argmax(ratio)), err.shape)
    pos = ref["y64"] > 0
    t = {
        "rel_l2_vs_torch_fp64": numerics.rel_l2(y, ref["y64"]),
        "rel_l2_vs_torch_fp32": numerics.rel_l2(y, ref["y32"]),
        "max_abs_err": float(err.max()),
        "max_err_over_bound": float(ratio.max()),
        "worst": [int(i) for i in worst],
        "bound_median": float(np.median(ref["bound"])),
        "token_elements_that_may_flip": ref["token_flips"],
        "within_bound": bool(np.all(np.isfinite(y)) and np.all(err <= ref["bound"])),
        "median_err_vs_mixed": float(np.median(err[pos])) if pos.any() else 0.0,
        "median_err_vs_unrounded_h": float(np.median(np.abs(y - ref["alt"])[pos])),
        "h_rounded": iree_block.h_rounded(y, ref["y64"], ref["alt"]),
    }
    t["passed"] = t["within_bound"] and t["h_rounded"]
    if not t["within_bound"]:
        bad = np.argwhere(~(err <= ref["bound"]))[:3]
        t["first_mismatches"] = [
            f"{tuple(int(i) for i in b)}: {y[tuple(b)]:.9g} vs {ref['y64'][tuple(b)]:.9g} "
            f"(bound {ref['bound'][tuple(b)]:.3g})"
            for b in bad
        ]
    return t


def check_folder(folder: str, driver: str, trials: int) -> dict:
    from rowfuse.lab import iree_run

    model = load_model(os.path.join(folder, "weights.npz"))
    module = iree_run.load(os.path.join(folder, "module.vmfb"), driver)
    res = {"folder": folder, "driver": driver, "trials": []}
    for _ in range(trials):
        seed = random.SystemRandom().randrange(2**31)
        x = make_input(seed)
        y = module(module.to_device(x)).to_host()
        res["trials"].append({"seed": seed, **check_output(y, reference(model, x))})
    res["passed"] = all(t["passed"] for t in res["trials"])
    return res


def summary_line(r: dict) -> str:
    w = max(r["trials"], key=lambda t: t["max_err_over_bound"])
    line = (
        f"{r['folder']} on {r['driver']}: rel L2 {w['rel_l2_vs_torch_fp64']:.2e} vs PyTorch "
        f"fp64 ({w['rel_l2_vs_torch_fp32']:.2e} vs fp32), max |err| {w['max_abs_err']:.2e} = "
        f"{w['max_err_over_bound']:.3f} of the bound, median |err| "
        f"{w['median_err_vs_mixed']:.1e} (vs {w['median_err_vs_unrounded_h']:.1e} to the "
        f"unrounded-H model)"
    )
    for m in w.get("first_mismatches", []):
        line += f"\n    {m}"
    return line + (" ok" if r["passed"] else " FAILED")


# ---------------------------------------------------------------- GPU run


def gpu_run(args) -> dict:
    """Each carried CUDA module checked, then timed beside PyTorch eager and torch.compile
    (each also from a CUDA graph) on the same input (rowfuse.lab.gpu's harness). With
    --device cpu, a dry run of the same code on llvm-cpu modules (no graphs, no spans)."""
    import torch

    from rowfuse.lab import gpu as labgpu
    from rowfuse.lab import iree_run

    gpu = args.device == "cuda"
    driver = "cuda" if gpu else "local-task"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    folders = sorted(
        d
        for d in os.listdir(args.carry)
        if os.path.exists(os.path.join(args.carry, d, "module.vmfb"))
    )
    if not folders:
        raise SystemExit(f"rowfuse.iree.model: no VARIANT/module.vmfb under {args.carry}")
    model = load_model(os.path.join(args.carry, folders[0], "weights.npz"))
    seed = random.SystemRandom().randrange(2**31)
    x = make_input(seed)
    ref = reference(model, x)
    res = {"schema": SCHEMA, "environment": labgpu.environment(args), "seed": seed}
    res["variants"], variants, failed = {}, [], {}
    for name in folders:
        folder = os.path.join(args.carry, name)
        try:
            module = iree_run.load(os.path.join(folder, "module.vmfb"), driver)
            xd, box = module.to_device(x), {}

            def launch(module=module, xd=xd, box=box):
                box["y"] = module(xd)

            v = labgpu.Variant(
                f"iree-{name}-{args.iree_mode}",
                f"IREE {name} ({args.iree_mode})",
                launch,
                lambda box=box: box["y"].to_host(),
                sync,
            )
            with open(os.path.join(folder, "splice.json")) as f:
                v.result["splice"] = json.load(f)
            variants.append(v)
        except Exception as e:
            failed[f"iree-{name}"] = {"label": f"IREE {name}", "error": f"{type(e).__name__}: {e}"}
    if not args.no_torch:
        variants += labgpu._torch_variants(model, torch.from_numpy(x), args.device, gpu, failed)
    res["variants"].update(failed)
    ready = []
    for v in variants:
        res["variants"][v.name] = v.result
        try:
            with torch.no_grad():
                getattr(v, "check_launch", v.launch)()
            v.sync()
            v.result["check"] = check_output(v.output(), ref)
        except Exception as e:
            v.result["error"] = f"check failed to run: {type(e).__name__}: {e}"
            continue
        c = v.result["check"]
        print(
            f"[model] {v.label}: rel L2 {c['rel_l2_vs_torch_fp64']:.2e}, "
            f"{c['max_err_over_bound']:.3f} of the bound {'ok' if c['passed'] else 'MISMATCH'}",
            flush=True,
        )
        if c["passed"]:
            ready.append(v)
    if ready:
        labgpu._time(ready, args.rounds, args.obs)
        for v in ready if gpu else []:
            try:
                labgpu._spans(v, args.span_calls)
            except Exception as e:
                v.result["span_note"] = f"profiler failed: {type(e).__name__}: {e}"
    res["passed"] = not failed and all(v.result.get("check", {}).get("passed") for v in variants)
    return res


def table(runs: list[dict]) -> str:
    """The variants' table, as the block's GPU run prints it (rowfuse.iree.gpu.table)."""
    from rowfuse.iree import gpu as iree_gpu

    return iree_gpu.table(runs)


# ---------------------------------------------------------------- CLI


def main(argv=None) -> int:
    doc = __doc__.split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m rowfuse.iree.model", description=doc)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="export, schedule, link and compile the model")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--device", choices=["llvm-cpu", "cuda"], default="llvm-cpu")
    b.add_argument("--schedule", default="persistent-smem", help="a schedule name, or stock")
    b.add_argument("--kernels", choices=["extern", "codegen"])
    b.add_argument("--plant-fault", choices=FAULTS, help="tests only: the check must fail")
    c = sub.add_parser("check", help="run built modules against PyTorch fp64")
    c.add_argument("folders", nargs="+")
    c.add_argument("--driver", default="local-task")
    c.add_argument("--trials", type=int, default=3)
    c.add_argument("-o", "--json")
    g = sub.add_parser("gpu", help="on the GPU machine: check and time the carried modules")
    g.add_argument("--carry", required=True)
    g.add_argument("--iree-mode", choices=["streams", "graphs"], default="streams")
    g.add_argument("--no-torch", action="store_true")
    g.add_argument("--rounds", type=int, default=5)
    g.add_argument("--obs", type=int, default=200)
    g.add_argument("--span-calls", type=int, default=20)
    g.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a dry run")
    g.add_argument("--table", nargs="*", help="print the table of these run JSON files")
    g.add_argument("-o", "--json")
    args = p.parse_args(argv)
    if args.cmd == "build":
        t0 = time.perf_counter()
        try:
            ev = build(
                args.output,
                args.device,
                args.schedule,
                args.kernels,
                args.plant_fault,
                say=lambda m: print(f"  {m}", flush=True),
            )
        except BuildError as e:
            print(f"rowfuse.iree.model: {e}", file=sys.stderr)
            return 1
        print(
            f"{args.output}: {ev['dispatches']} dispatches, block in "
            f"{len(ev['block_dispatches'])}; splice: {ev['why']} "
            f"({time.perf_counter() - t0:.1f} s)"
        )
        return 0
    if args.cmd == "check":
        results = [check_folder(f, args.driver, args.trials) for f in args.folders]
        for r in results:
            print(summary_line(r))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"schema": SCHEMA, "results": results}, f, indent=1)
                f.write("\n")
        return 0 if all(r["passed"] for r in results) else 1
    if args.table:
        runs = []
        for path in args.table:
            with open(path) as f:
                runs.append(json.load(f))
        print(table(runs))
        return 0
    import iree.runtime as rt

    from rowfuse.bench.harness import init_profiler_for_graphs
    from rowfuse.lab import gpu as labgpu

    if args.iree_mode == "graphs":
        rt.flags.parse_flags("--cuda_use_streams=false")
    if args.device == "cuda":
        init_profiler_for_graphs()
    res = gpu_run(args)
    if args.json:
        labgpu._write(res, args.json)
    print(table([res]))
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
