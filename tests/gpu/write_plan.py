"""Writes plan.json for a bare kernel package (kernels/build.py output, no ONNX model):
the GPU test packages need no weights, since the check and the bench draw random ones.

    python3 tests/gpu/write_plan.py PKGDIR ROWS

Channels, hidden, the library and the tile rows come from the package's kernels.json, so
the plan always says what the generator actually built (`rowfuse compile` writes the
full plan for real models).
"""

import json
import sys
from pathlib import Path


def main() -> int:
    pkg, rows = Path(sys.argv[1]), int(sys.argv[2])
    k = json.loads((pkg / "kernels.json").read_text())
    plan = {
        "format": "rowfuse-package",
        "version": 1,
        "block": "residual-mlp",
        "rows": rows,
        "channels": k["channels"],
        "hidden": k["hidden"],
        "schedule": "persistent-smem",
        "tile_rows": k["schedules"]["persistent-smem"]["tile_rows"],
        "arch": k["arch"],
        "library": k["library"],
        "kernels": "kernels.json",
    }
    (pkg / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
