"""The evaluator's worked example, end to end on the CPU (fixed seeds, a few seconds).

    python examples/eval/example.py --out DIR [--rows 3000] [--epochs 40] [--no-eval]

1. Makes a synthetic table: 12 numeric features, 3 classes from a noisy random teacher,
   and two slice columns, `site` (a, b, c; site c's sensors have a larger gain) and
   `device` (phone, laptop). Training rows stay in memory; the evaluation rows go to
   DIR/eval.csv.
2. Trains a small classifier with PyTorch on the CPU: the residual MLP block
   H = ReLU(X W1 + b1), Y = ReLU(H W2 + b2 + X) followed by a linear head.
3. Exports it with rowfuse's exporter (rowfuse.export.export) to DIR/model.onnx (block and
   head) and DIR/block.onnx (the block alone, which `rowfuse compile` turns into a GPU
   package), and writes DIR/torch_fp64.npy (the trained model's logits in float64) and
   DIR/weights.npz (its parameters).
4. Runs `rowfuse verify` and `rowfuse eval --cpu-mixed` into DIR/report/ (unless --no-eval).

The data and the model are synthetic: this example makes no claim about any real task.
To evaluate a real deployment, bring your own model and a licensed, representative
evaluation set.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "examples")]

FEATURES = 12
HIDDEN = 48
CLASSES = 3
MODEL_ROWS = 64  # rows per run of the exported graph; eval runs the table 64 rows at a time
TRAIN_ROWS = 6000
SEED = 2026
SITES = ("a", "b", "c")
DEVICES = ("laptop", "phone")


def make_table(rows: int, rng: np.random.Generator) -> dict:
    """Features (float32 values), labels and slices of `rows` synthetic rows."""
    site = rng.choice(len(SITES), size=rows, p=[0.5, 0.35, 0.15])
    device = rng.choice(len(DEVICES), size=rows, p=[0.4, 0.6])
    x = rng.standard_normal((rows, FEATURES))
    x[site == 1, :4] += 0.5  # site b: shifted
    x[site == 2, 4:8] *= 3.0  # site c: larger sensor gain on four features
    x[device == 1, 8:] += 0.25 * rng.standard_normal((int((device == 1).sum()), 4))
    teacher = np.random.default_rng(7)
    w1 = teacher.standard_normal((FEATURES, 16)) / np.sqrt(FEATURES)
    w2 = teacher.standard_normal((16, CLASSES))
    logits = np.tanh(x @ w1) @ w2 + 0.8 * rng.gumbel(size=(rows, CLASSES))
    return {
        "x": x.astype(np.float32),
        "label": logits.argmax(1),
        "site": site,
        "device": device,
    }


def write_csv(path: Path, t: dict) -> None:
    cols = [f"f{i}" for i in range(FEATURES)]
    with open(path, "w") as f:
        f.write(",".join(["id", "site", "device", *cols, "label"]) + "\n")
        for i in range(len(t["label"])):
            vals = ",".join(repr(float(v)) for v in t["x"][i])  # float32 values, exactly
            f.write(f"{i},{SITES[t['site'][i]]},{DEVICES[t['device'][i]]},{vals},{t['label'][i]}\n")


def make_model():
    import torch
    from residual_mlp import ResidualMLP

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = ResidualMLP(FEATURES, HIDDEN)
            self.head = torch.nn.Linear(FEATURES, CLASSES)

        def forward(self, x):
            return self.head(self.block(x))

    return Classifier()


def train(t: dict, epochs: int):
    import torch

    torch.manual_seed(SEED)
    model = make_model()
    x = torch.from_numpy(t["x"])
    y = torch.from_numpy(t["label"]).long()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=gen).split(256):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return model.eval(), loss.item()


def export_all(model, out: Path) -> None:
    import torch
    from rowfuse.export import export

    example = torch.zeros(MODEL_ROWS, FEATURES)
    export(model, example, MODEL_ROWS, str(out / "model.onnx"))
    export(model.block, example, MODEL_ROWS, str(out / "block.onnx"))


def run_eval(out: Path, rowfuse: str, plot: bool) -> int:
    features = ",".join(f"f{i}" for i in range(FEATURES))
    subprocess.run([rowfuse, "verify", str(out / "model.onnx"), "--quiet"], check=True)
    cmd = [rowfuse, "eval", "--model", str(out / "model.onnx"), "--data", str(out / "eval.csv")]
    cmd += ["--features", features, "--label", "label", "--slice", "site", "--slice", "device"]
    cmd += ["--cross", "--cpu-mixed", "-o", str(out / "report")]
    if not plot:
        cmd.append("--no-plot")
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--rows", type=int, default=3000, help="evaluation rows (default 3000)")
    p.add_argument("--epochs", type=int, default=40, help="training epochs (default 40)")
    p.add_argument("--no-eval", action="store_true", help="stop after the export")
    p.add_argument("--no-plot", action="store_true", help="pass --no-plot to rowfuse eval")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # the same result on every machine
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    train_t, eval_t = make_table(TRAIN_ROWS, rng), make_table(args.rows, rng)
    write_csv(out / "eval.csv", eval_t)
    t0 = time.time()
    model, loss = train(train_t, args.epochs)
    with torch.no_grad():
        logits = model.double()(torch.from_numpy(eval_t["x"]).double()).numpy()
    model.float()
    np.save(out / "torch_fp64.npy", logits)
    params = {k.replace(".", "_"): v.double().numpy() for k, v in model.state_dict().items()}
    np.savez(out / "weights.npz", **params)  # block_fc1_weight, ..., head_bias (fp32 values)
    acc = float((logits.argmax(1) == eval_t["label"]).mean())
    print(
        f"trained {args.epochs} epochs in {time.time() - t0:.1f} s: last batch loss {loss:.3f}, "
        f"eval accuracy (PyTorch, fp64) {100 * acc:.2f}%"
    )
    export_all(model, out)
    print(f"wrote {out}/eval.csv, model.onnx, block.onnx, torch_fp64.npy, weights.npz")
    if args.no_eval:
        return 0
    rowfuse = os.environ.get("RF_BIN", str(ROOT / "build" / "rowfuse"))
    return run_eval(out, rowfuse, plot=not args.no_plot)


if __name__ == "__main__":
    sys.exit(main())
