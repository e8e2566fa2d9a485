"""On the GPU machine: each carried IREE CUDA module (rowfuse.lab.carry) run through the
IREE runtime, checked against PyTorch and timed beside PyTorch eager and torch.compile on
the same inputs.

    python -m rowfuse.lab.gpu --lab build/lab-gpu [--iree-mode streams|graphs] [--no-torch]
        [--rounds 5] [--obs 200] [--device cuda|cpu] -o run.json

Per model, with the weights the module was compiled with (MODEL/weights.npz) and a fresh
random input (seed recorded): the fp64 and fp32 PyTorch results on the CPU are the
reference; every variant's output must be within rowfuse.lab.numerics' tolerance of both
(TF32 is switched off, so PyTorch computes in fp32 too). Then, interleaving the variants,
rounds x obs observations of host completion: host clock from just before the call to
the return of the device synchronize (IREE's exported `main` itself waits on the result's
fence before it returns); for the PyTorch variants also the CUDA-event interval; and from
CUPTI (torch.profiler) the kernels per call and the GPU span of a call (first kernel
start to last kernel end), IREE's kernels included, with the driver calls they came from.

Variants: IREE CUDA (streams or graphs: IREE's CUDA driver records command buffers into
CUDA graphs with --cuda_use_streams=false; one mode per process, because the runtime reads
the flag when it creates the driver), PyTorch eager, torch.compile (default mode), each
PyTorch variant also captured in a CUDA graph. --device cpu runs the same harness with
the IREE local-task driver and PyTorch on the CPU (a dry run; no events, graphs, spans).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import random
import sys
import tempfile
import time

from rowfuse.bench.harness import git_revision, init_profiler_for_graphs

from . import carry, iree_run, models, numerics

SCHEMA = "rowfuse-lab-run/1"


def progress(msg: str) -> None:
    print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def summarize(values) -> dict:
    """rowfuse's one summary (src/base/stats.c through librowfuse.so, carried with the lab):
    count, median, p10, p90, mean, min, max and the median's bootstrap interval."""
    from rowfuse.bench import harness as bench

    return bench.summarize(values)


class Variant:
    def __init__(self, name, label, launch, output, sync, events=False):
        self.name, self.label = name, label
        self.launch, self.output, self.sync = launch, output, sync
        self.events = events
        self.result = {"label": label}


def _iree_variant(folder, driver, mode, x):
    module = iree_run.load(os.path.join(folder, "module.vmfb"), driver)
    xd = module.to_device(x.numpy())
    label = f"IREE {'CUDA' if driver == 'cuda' else driver} ({mode})"
    box = {}

    def launch():
        box["y"] = module(xd)

    return Variant(f"iree-{mode}", label, launch, lambda: box["y"].to_host(), lambda: None)


def _torch_variants(module, x, dev, with_graphs, failed):
    """PyTorch eager and torch.compile, each also replayed from a CUDA graph when
    with_graphs; a variant that cannot be built goes into `failed` with the reason."""
    import torch

    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    xt = x.to(dev)
    m = copy.deepcopy(module).to(dev)
    out = []
    for name, label, make in (
        ("torch-eager", "PyTorch eager", lambda: m),
        ("torch-compile", "torch.compile", lambda: torch.compile(m)),
    ):
        box = {}
        try:
            fn = make()

            def launch(fn=fn, box=box):
                box["y"] = fn(xt)

            v = Variant(name, label, launch, lambda box=box: box["y"].cpu().numpy(), sync)
            v.events = dev == "cuda"
            t0 = time.perf_counter()
            with torch.no_grad():
                for _ in range(3):  # warm-up (compiles torch.compile's kernels)
                    v.launch()
            sync()
            v.result["warmup_s"] = round(time.perf_counter() - t0, 2)
            out.append(v)
        except Exception as e:
            failed[name] = {"label": label, "error": f"{type(e).__name__}: {e}"}
            continue
        if not with_graphs:
            continue
        try:  # warm up on a side stream, then capture (as rowfuse.bench.harness.capture does)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.no_grad(), torch.cuda.stream(side):
                for _ in range(3):
                    fn(xt)
            torch.cuda.current_stream().wait_stream(side)
            sync()
            g = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(g):
                y_static = fn(xt)
            sync()
        except Exception as e:
            failed[name + "-graph"] = {"label": label + " + graph", "error": f"capture: {e}"}
            continue

        def poison_replay(g=g, y=y_static):
            y.fill_(float("nan"))
            g.replay()

        gv = Variant(name + "-graph", label + " + graph", g.replay, None, sync, True)
        gv.output = lambda y=y_static: y.cpu().numpy()
        gv.check_launch = poison_replay
        out.append(gv)
    return out


def _check(v, ref64, ref32, tol):
    import torch

    with torch.no_grad():
        getattr(v, "check_launch", v.launch)()
        v.sync()
        v.result["check"] = numerics.compare(v.output(), ref64, ref32, tol)


def _time(variants, rounds, obs):
    import torch

    for v in variants:
        v.host, v.ev = [], []
    e0 = e1 = None
    if any(v.events for v in variants):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        for _ in range(rounds):
            for v in variants:
                for _ in range(10):  # re-warm after the other variants ran
                    v.launch()
                v.sync()
                for _ in range(obs):
                    t0 = time.perf_counter_ns()
                    if v.events:
                        e0.record()
                    v.launch()
                    if v.events:
                        e1.record()
                    v.sync()
                    t1 = time.perf_counter_ns()
                    v.host.append((t1 - t0) / 1000.0)
                    if v.events:
                        v.ev.append(e0.elapsed_time(e1) * 1000.0)
    for v in variants:
        v.result["host_us"] = summarize(v.host)
        v.result["event_us"] = summarize(v.ev) if v.ev else None


def split_calls(kernels, calls: int, gap_us: float = 500.0):
    """Groups (start, end, name) kernel records, sorted by start, into calls separated by
    idle gaps longer than gap_us; None when that does not give `calls` groups."""
    groups = []
    for k in kernels:
        if groups and k[0] - max(e for _, e, _ in groups[-1]) <= gap_us:
            groups[-1].append(k)
        else:
            groups.append([k])
    return groups if len(groups) == calls else None


def _spans(v, calls: int) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            v.launch()
            v.sync()
            time.sleep(0.002)  # an idle gap between calls: split_calls needs it
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    kernels = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)), e.get("name", ""))
        for e in events
        if e.get("cat") == "kernel" and e.get("ph") == "X"
    )
    apis = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X":
            apis[e.get("name", "")] = apis.get(e.get("name", ""), 0) + 1
    v.result["api_calls"] = dict(sorted(apis.items(), key=lambda kv: -kv[1])[:8])
    groups = split_calls(kernels, calls)
    if groups is None:
        v.result["span_note"] = f"CUPTI saw {len(kernels)} kernel records for {calls} calls"
        v.result["span_us"] = None
        return
    v.result["kernels"] = max(len(g) for g in groups)
    v.result["kernel_names"] = sorted({k[2][:80] for k in max(groups, key=len)})
    v.result["span_us"] = summarize([max(k[1] for k in g) - g[0][0] for g in groups])


def run_model(name, folder, args) -> dict:
    import torch

    module = models.build(name)
    seeded = {k: t.clone() for k, t in module.state_dict().items()}
    carry.load_weights(module, os.path.join(folder, "weights.npz"))
    same = all(torch.equal(seeded[k], t) for k, t in module.state_dict().items())
    seed = random.SystemRandom().randrange(2**31)
    x = models.make_input(name, seed)
    with torch.no_grad():
        ref64 = copy.deepcopy(module).double()(x.double()).numpy()
        ref32 = module(x).numpy()
    tol = numerics.tolerance(models.contraction_lengths(name))
    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    res = {
        "seed": seed,
        "input_shape": list(x.shape),
        "tolerance": tol,
        "weights_equal_seeded_here": same,
        "torch_ops": index.get("torch_ops"),
        "dispatch_summary": index.get("dispatch_summary", {}),
        "cuda_target": index.get("cuda_target"),
        "variants": {},
    }
    variants, failed = [], {}
    driver = "cuda" if args.device == "cuda" else "local-task"
    try:
        variants.append(_iree_variant(folder, driver, args.iree_mode, x))
    except Exception as e:  # recorded, never dropped
        failed[f"iree-{args.iree_mode}"] = {
            "label": f"IREE ({args.iree_mode})",
            "error": f"{type(e).__name__}: {e}",
        }
    if not args.no_torch:
        variants += _torch_variants(module, x, args.device, args.device == "cuda", failed)
    for vname, f in failed.items():
        res["variants"][vname] = f
        progress(f"{name}: {f['label']}: FAILED: {f['error']}")
    ready = []
    for v in variants:
        res["variants"][v.name] = v.result
        try:
            _check(v, ref64, ref32, tol)
        except Exception as e:
            v.result["error"] = f"check failed to run: {type(e).__name__}: {e}"
            progress(f"{name}: {v.label}: {v.result['error']}")
            continue
        c = v.result["check"]
        verdict = "ok" if c["ok"] else "MISMATCH"
        progress(
            f"{name}: {v.label}: rel L2 {c['rel_l2_vs_torch_fp64']:.2e} vs fp64 "
            f"(tol {tol:.1e}) {verdict}"
        )
        if c["ok"]:  # checked before timing: a mismatched variant is not timed
            ready.append(v)
    if ready:
        progress(f"{name}: timing {len(ready)} variants, {args.rounds} x {args.obs} each")
        _time(ready, args.rounds, args.obs)
        if args.device == "cuda":
            for v in ready:
                try:
                    _spans(v, args.span_calls)
                except Exception as e:
                    v.result["span_note"] = f"profiler failed: {type(e).__name__}: {e}"
    return res


def _write(run, path) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def environment(args) -> dict:
    import torch

    env = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": git_revision(),
        "device": args.device,
        "iree_mode": args.iree_mode,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
    }
    try:
        from importlib.metadata import version

        env["iree_runtime"] = version("iree-base-runtime")
    except Exception as e:
        env["iree_runtime"] = f"unknown ({e})"
    if args.device == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
        major, minor = torch.cuda.get_device_capability(0)
        env["capability"] = f"sm_{major}{minor}"
    return env


def main(argv=None) -> int:
    doc = __doc__.split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m rowfuse.lab.gpu", description=doc)
    p.add_argument("--lab", required=True, help="carried folder (rowfuse.lab.carry)")
    p.add_argument("--models", default=",".join(models.MODELS))
    p.add_argument("--iree-mode", choices=["streams", "graphs"], default="streams")
    p.add_argument("--no-torch", action="store_true", help="IREE only")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--obs", type=int, default=200)
    p.add_argument("--span-calls", type=int, default=20)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)

    import iree.runtime as rt
    import torch

    if args.iree_mode == "graphs":
        rt.flags.parse_flags("--cuda_use_streams=false")  # before the driver exists
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if args.device == "cuda":
        init_profiler_for_graphs()  # before any graph (IREE's memoized ones included)
    else:
        torch.set_num_threads(1)  # a dry run: IREE's CPU workers and torch's would contend
    run = {"schema": SCHEMA, "env": environment(args), "models": {}}
    progress(f"env: {json.dumps(run['env'])}")
    for name in [n for n in args.models.split(",") if n]:
        folder = os.path.join(args.lab, name)
        if not os.path.isdir(folder):
            run["models"][name] = {"error": f"{folder} not found (run tests/gpu/gpu prepare lab)"}
            progress(f"{name}: {run['models'][name]['error']}")
            continue
        run["models"][name] = run_model(name, folder, args)
        _write(run, args.output)  # after every model: a run cut short keeps what it has
    _write(run, args.output)
    progress(f"wrote {args.output}")
    bad = [
        f"{m}/{v}"
        for m, r in run["models"].items()
        for v, res in r.get("variants", {}).items()
        if "error" in res or not res.get("check", {}).get("ok", False)
    ]
    bad += [m for m, r in run["models"].items() if "error" in r]
    if bad:
        progress(f"failed or mismatched: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
