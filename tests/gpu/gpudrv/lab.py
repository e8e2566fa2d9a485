"""lab: the stock-compiler lab's GPU half. Here: every model's lab folder (`python -m
rowfuse.lab MODEL`, in build-gpu-work/lab) and what travels of it (`python -m
rowfuse.lab.carry --target cuda`: the CUDA module.vmfb, weights.npz, index.json per model)
in build-gpu/lab, and the IREE runtime wheel for the GPU machine's Python 3.12. There:
  1. `python -m rowfuse.lab.gpu`, IREE with stream command buffers, PyTorch eager and
     torch.compile (each also from a CUDA graph): checked against PyTorch fp64, then timed;
  2. the same for IREE with CUDA-graph command buffers (read once per process);
  3. `python -m rowfuse.lab.report`: report.md, report.json, report.png.
"""

from __future__ import annotations

import shutil

from . import common as c

MODELS = ("cnn", "attention", "attention_causal", "gru")


def prepare(jobs: int, stamp: str) -> dict:
    lab = c.WORK / "lab"
    for m in MODELS:
        c.say(f"== lab {m}")
        rc, out, secs, _ = c.sh(
            ["python3", "-m", "rowfuse.lab", m, "-o", lab / m], env=c.compile_env()
        )
        if rc != 0:
            raise c.Failed(f"lab {m}: {out.strip()[-800:]}")
        c.say("  " + "\n  ".join(out.strip().splitlines()[-2:]) + f" ({secs:.0f} s)")
    shutil.rmtree(c.CARRY / "lab", ignore_errors=True)
    rc, out, _, _ = c.sh(
        [
            "python3",
            "-m",
            "rowfuse.lab.carry",
            "--lab",
            lab,
            "--target",
            "cuda",
            "-o",
            c.CARRY / "lab",
        ],
        env=c.compile_env(),
    )
    if rc != 0:
        raise c.Failed(f"rowfuse.lab.carry: {out.strip()[-800:]}")
    return {"models": list(MODELS), "wheel": c.fetch_iree_wheel()}


def run(r: c.Run) -> None:
    m = r.manifest("lab")
    if m is None:
        return
    why = c.iree_site(r.env, r.work)
    if why:
        r.step("lab", "IREE runtime", False, 0, why)
        return
    d = r.work / "lab"
    d.mkdir(parents=True, exist_ok=True)
    lab = c.CARRY / "lab"
    r.cmd(
        "lab",
        "IREE (streams) + PyTorch",
        [
            "python3",
            "-m",
            "rowfuse.lab.gpu",
            "--lab",
            lab,
            "--iree-mode",
            "streams",
            "-o",
            d / "run_streams.json",
        ],
        "run_streams.log",
        175,
    )
    r.cmd(
        "lab",
        "IREE (CUDA graphs)",
        [
            "python3",
            "-m",
            "rowfuse.lab.gpu",
            "--lab",
            lab,
            "--iree-mode",
            "graphs",
            "--no-torch",
            "-o",
            d / "run_graphs.json",
        ],
        "run_graphs.log",
        60,
    )
    runs = [p for p in (d / "run_streams.json", d / "run_graphs.json") if p.is_file()]
    if not runs:
        r.step("lab", "report", False, 0, "no run wrote its JSON")
        return
    ok, _, text = r.cmd(
        "lab",
        "report",
        ["python3", "-m", "rowfuse.lab.report", *runs, "-o", d / "report"],
        "report.log",
        120,
    )
    r.primary.append(d / "report" / "report.json")
    r.subs["lab"] = {"table": "\n".join(text.strip().splitlines()[-16:])}
