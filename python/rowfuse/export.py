"""Export a PyTorch module to ONNX for rowfuse.

    python -m rowfuse.export MODULE:FACTORY --rows N -o model.onnx

Imports MODULE (from the current directory or PYTHONPATH) and calls FACTORY(), which
returns a torch.nn.Module, or (module, example_input). Without an example input, the
input is [N, in_features] read off the module's first nn.Linear. The module is exported
in FP32 through torch.export and the dynamo ONNX exporter; the FX graph it came from is
written as text beside the model (model.fx.txt). Other tools call this exact command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys


def _first_linear_in_features(module):
    import torch

    for m in module.modules():
        if isinstance(m, torch.nn.Linear):
            return m.in_features
    return None


def load_factory(spec: str):
    """Returns (module, example_input or None) from 'MODULE:FACTORY'."""
    if ":" not in spec:
        raise SystemExit(f"rowfuse.export: expected MODULE:FACTORY, got '{spec}'")
    mod_name, fn_name = spec.split(":", 1)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise SystemExit(f"rowfuse.export: cannot import module '{mod_name}': {e}") from e
    fn = getattr(mod, fn_name, None)
    if fn is None or not callable(fn):
        raise SystemExit(f"rowfuse.export: '{mod_name}' has no callable '{fn_name}'")
    made = fn()
    if isinstance(made, tuple):
        if len(made) != 2:
            raise SystemExit(f"rowfuse.export: {spec}() must return a module or (module, input)")
        return made[0], made[1]
    return made, None


def export(module, example, rows: int, out_path: str) -> str:
    """Exports `module` to `out_path` (ONNX) and its FX graph to <stem>.fx.txt."""
    import logging

    import torch

    # The exporter logs a warning per optional torchvision op it cannot register.
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    module = module.float().eval()
    if example is None:
        c = _first_linear_in_features(module)
        if c is None:
            raise SystemExit(
                "rowfuse.export: the module has no nn.Linear to read in_features from; "
                "return (module, example_input) from the factory"
            )
        gen = torch.Generator().manual_seed(0)
        example = torch.randn(rows, c, generator=gen)
    example = example.float()
    if example.dim() < 1 or example.shape[0] != rows:
        raise SystemExit(
            f"rowfuse.export: example input has shape {tuple(example.shape)}, expected "
            f"{rows} rows on dim 0"
        )
    with torch.no_grad():
        ep = torch.export.export(module, (example,))
        stem = out_path[:-5] if out_path.endswith(".onnx") else out_path
        with open(stem + ".fx.txt", "w") as f:
            f.write(str(ep.graph_module.code))
            f.write("\n# graph\n")
            f.write(str(ep.graph))
        program = torch.onnx.export(ep, (example,), dynamo=True, optimize=True, verbose=False)
        program.save(out_path, external_data=False)
    return out_path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rowfuse.export", description=__doc__.split("\n")[0])
    p.add_argument("factory", help="MODULE:FACTORY returning a module or (module, input)")
    p.add_argument("--rows", type=int, required=True, help="rows N of the example input")
    p.add_argument("-o", "--output", required=True, help="output .onnx path")
    args = p.parse_args(argv)
    if args.rows < 1:
        raise SystemExit(f"rowfuse.export: --rows must be >= 1, got {args.rows}")
    module, example = load_factory(args.factory)
    export(module, example, args.rows, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
