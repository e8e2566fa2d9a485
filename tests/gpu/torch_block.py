"""The drop-in torch module on the GPU (`tests/gpu/gpu run check`): rowfuse.torch.compile_block on
the example's package, eager and captured in a torch CUDA graph, checked against the C
reference in mixed precision with the one comparison rule; then weights='module' with a
module of other weights on the same package; the block inside torch.compile(fullgraph=True);
then, where build-torch-op was prepared (tests/python/test_torch_op.py), that test's GPU
half on chain blocks. Exits non-zero on any failure.

    python3 tests/gpu/torch_block.py PKGDIR
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples")]

import residual_mlp  # noqa: E402
from rowfuse import torch as rt  # noqa: E402
from rowfuse.capi import clib  # noqa: E402


def say(label: str, how: str, v: dict) -> None:
    verdict = "ok" if v["passed"] else "FAILED " + v["message"]
    print(f"{label} {how}: {v['steps']:.3f} steps, rel. L2 {v['rel_l2']:.2e} {verdict}")


def check(label: str, block, module, seed: int) -> bool:
    w1, b1, w2, b2 = rt.kernel_weights(module)
    x16 = clib.mlp_case(block.rows, block.channels, block.hidden, seed, reference=False).x
    case = clib.case_of(x16, w1, b1, w2, b2)
    x = torch.from_numpy(case.x).cuda()
    ok = True
    y = block(x)
    torch.cuda.synchronize()
    v = clib.compare(y.cpu().numpy(), case)
    say(label, "eager", v)
    ok &= v["passed"]
    out = torch.empty_like(y)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        block(x, out=out)  # warm-up outside capture
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        block(x, out=out)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    v = clib.compare(out.cpu().numpy(), case)
    say(label, "graph", v)
    return ok and v["passed"]


def compiled(block) -> bool:
    """The block inside torch.compile(fullgraph=True): the same Y as the eager op."""
    x = torch.from_numpy(clib.mlp_case(block.rows, block.channels, block.hidden, 13).x).cuda()
    fn = torch.compile(lambda t: block(t) * 2.0, fullgraph=True)
    same = torch.equal(fn(x), block(x) * 2.0)
    print(f"torch.compile(fullgraph=True): {'ok' if same else 'FAILED (differs from eager)'}")
    return same


def chain_half() -> bool:
    """The GPU half of tests/python/test_torch_op.py (chain blocks under torch.compile and
    in CUDA graphs), on the packages `python3 tests/python/test_torch_op.py prepare
    build-torch-op` made before the GPU run; said and skipped when they are not there."""
    pkgs = os.environ.get("RF_TORCH_OP_PKGS") or os.path.join(ROOT, "build-torch-op")
    if not os.path.isdir(pkgs):
        print(f"chain blocks under torch: not run ({pkgs} not prepared)")
        return True
    env = dict(os.environ, RF_TORCH_OP_PKGS=pkgs)
    test = os.path.join(ROOT, "tests", "python", "test_torch_op.py")
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-k", "gpu", test]
    rc = subprocess.run(cmd, env=env, cwd=ROOT).returncode
    print(f"chain blocks under torch: {'ok' if rc == 0 else 'FAILED'}")
    return rc == 0


def main() -> int:
    pkg = sys.argv[1]
    module = residual_mlp.make()
    block = rt.compile_block(module, rows=49, package=pkg)
    ok = block.weights_source == "package" and check("package weights", block, module, 11)
    other = residual_mlp.make(seed=residual_mlp.SEED + 1)
    try:
        rt.compile_block(other, rows=49, package=pkg)
        print("other weights: FAILED (accepted a package compiled from other weights)")
        ok = False
    except ValueError as e:
        print(f"other weights refused: ok ({str(e)[:60]}...)")
    block2 = rt.compile_block(other, rows=49, package=pkg, weights="module")
    ok &= check("weights='module'", block2, other, 12)
    ok &= compiled(block)
    ok &= chain_half()
    print("torch_block:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
