"""rowfuse.torch: compile_block on a chain and the torch.library op rowfuse::block.

Without a GPU: the op's registration and schema, its fake implementation (shapes and dtypes
under FakeTensorMode and torch.compile(fullgraph=True)), torch.library.opcheck, the CPU path
(the chain's C reference in the plan's precision) against PyTorch fp64 within the derived
bound, a given package checked against the module, and a module that is no chain refused
with the compiler's message. Needs RF_BIN / ROWFUSE_LIB, torch + onnx and the CuTe DSL.

On a GPU (each test skipped without CUDA, saying why): blocks of several kinds inside a
torch.compile'd model (fullgraph, the default backend) against eager PyTorch in fp64 within
the chain's bound, the op captured in a torch CUDA graph and replayed on new inputs, and the
residual MLP's block through the one comparison rule. The GPU machine has no CuTe DSL, so
the packages are made here first:

    python3 tests/python/test_torch_op.py prepare build-torch-op     # here
    RF_TORCH_OP_PKGS=build-torch-op python3 -m pytest -q -rs tests/python/test_torch_op.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "examples")]

from rowfuse import blocks  # noqa: E402
from rowfuse import torch as rt  # noqa: E402

SEED = 20261204
ROWS = 64  # the rows every package is planned for; the op runs any count
# kinds run on the GPU: a drop-in residual MLP, pre-LN GELU (tanh) FFN, SwiGLU + RMSNorm, a
# head to 10 classes (N_out != C); residual_mlp keeps the MLP schedules.
GPU_KINDS = ["res_mlp_gelu", "gpt2_ffn", "llama_ffn", "classifier"]
PKGS = Path(os.environ.get("RF_TORCH_OP_PKGS") or ROOT / "build-torch-op")
NO_CUDA = "no CUDA device: the GPU half runs on the GPU machine (tests/python/test_torch_op.py)"


def _xin(c: int, lead=(ROWS,), seed: int = SEED) -> torch.Tensor:
    print(f"seed {seed}, X {tuple(lead)} x {c}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*lead, c, generator=gen).half()


def _within(y, ref, bound, what: str) -> float:
    """Asserts |y - ref| <= bound per element (all finite); returns the worst ratio."""
    y = np.asarray(y, dtype=np.float64).reshape(ref.shape)
    assert np.isfinite(y).all(), f"{what}: {int((~np.isfinite(y)).sum())} non-finite values"
    ratio = np.abs(y - ref) / np.maximum(bound, 1e-300)
    worst = float(ratio.max())
    i = np.unravel_index(int(ratio.argmax()), ratio.shape)
    print(f"{what}: worst |y - ref| / bound = {worst:.3g} at {i}")
    assert worst <= 1.0, f"{what}: {int((ratio > 1).sum())} elements beyond the bound, worst {i}"
    return worst


def _fp64(module, x: torch.Tensor) -> torch.Tensor:
    """The module in fp64 (a copy) on X's values."""
    import copy

    with torch.no_grad():
        return copy.deepcopy(module).cpu().double()(x.cpu().double())


# ---- without a GPU ----


@pytest.fixture(scope="module")
def cpu_block():
    """The classifier (LayerNorm, a ReLU layer, a head to 10 classes) compiled by
    compile_block: a chain whose output width differs from its input's."""
    pytest.importorskip("cutlass", reason="the CuTe DSL (the kernel generator) is not installed")
    module, _ = blocks.make("classifier", small=True)
    return module, rt.compile_block(module, rows=ROWS)


def test_the_op_is_registered():
    op = torch.ops.rowfuse.block.default
    assert str(op._schema) == "rowfuse::block(Tensor x, int handle) -> Tensor"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Meta") or (
        torch._library.simple_registry.singleton.find(op.name()).fake_impl.kernel is not None
    )


def test_compile_block_builds_a_chain_block(cpu_block):
    module, block = cpu_block
    assert isinstance(block, rt.ChainBlock)
    assert (block.in_width, block.out_width) == (64, 10)
    assert block.plan["block"] == "chain" and os.path.exists(block.model)
    assert block.handle in rt._BLOCKS


def test_fake_gives_the_output_shape_and_dtype(cpu_block):
    from torch._subclasses.fake_tensor import FakeTensorMode

    _, block = cpu_block
    with FakeTensorMode():
        for lead in [(7,), (2, 33), (1,), (0,)]:
            x = torch.empty(*lead, 64, dtype=torch.float16)
            y = torch.ops.rowfuse.block(x, block.handle)
            assert tuple(y.shape) == (*lead, 10) and y.dtype == torch.float32
        with pytest.raises(ValueError, match="x must be float16"):
            torch.ops.rowfuse.block(torch.empty(4, 64), block.handle)
        with pytest.raises(ValueError, match=r"x must be \[\.\.\., 64\]"):
            torch.ops.rowfuse.block(torch.empty(4, 63, dtype=torch.float16), block.handle)
        with pytest.raises(ValueError, match="no block has handle"):
            torch.ops.rowfuse.block(torch.empty(4, 64, dtype=torch.float16), 10**9)


class Model(torch.nn.Module):
    """A model with a rowfuse block inside: a cast before it, PyTorch ops after it (exact
    ones, so compiled and eager agree bit for bit)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block(x.half()) * 2.0 + 1.0


def test_torch_compile_fullgraph_keeps_the_op(cpu_block):
    """torch.compile(fullgraph=True) traces the model in one graph holding rowfuse.block
    (the fake implementation gives the shapes), and the compiled model equals eager."""
    _, block = cpu_block
    model = Model(block)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = _xin(64, (2, 16)).float()
    compiled = torch.compile(model, fullgraph=True, backend=backend, dynamic=False)
    y = compiled(x)
    assert len(graphs) == 1 and "rowfuse.block" in graphs[0].code, graphs
    torch.testing.assert_close(y, model(x), rtol=0, atol=0)
    assert tuple(y.shape) == (2, 16, 10) and y.dtype == torch.float32
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        y2 = torch.compile(model, fullgraph=True, backend=backend, dynamic=True)(x)
        torch.testing.assert_close(y2, y, rtol=0, atol=0)


def test_opcheck(cpu_block):
    _, block = cpu_block
    for lead in [(ROWS,), (3, 5)]:
        got = torch.library.opcheck(torch.ops.rowfuse.block.default, (_xin(64, lead), block.handle))
        assert all(v == "SUCCESS" for v in got.values()), got


def test_cpu_path_is_within_the_bound_of_pytorch_fp64(cpu_block):
    """On CPU tensors the op runs the chain's reference in the plan's mixed precision; it
    lies within the derived bound of PyTorch fp64 on the same fp16 X (and is no copy of it:
    the fp16 stored values move it)."""
    module, block = cpu_block
    x = _xin(64, (37,))
    y = block(x).double().numpy()
    ref = _fp64(module, x).numpy()
    _, bound = rt.chain_reference(block.model, x, fp64=True)
    _within(y, ref, bound, "CPU op vs PyTorch fp64")
    assert np.abs(y - ref).max() > 0


def test_a_given_package_is_checked_against_the_module(cpu_block):
    module, block = cpu_block
    again = rt.compile_block(module, rows=ROWS, package=block.package)
    assert isinstance(again, rt.ChainBlock) and again.package == block.package
    other, _ = blocks.make("classifier", small=True)
    with torch.no_grad():
        other.fc.weight[3, 5] += 0.25
    with pytest.raises(ValueError, match="compiled from other weights: stage 1's W"):
        rt.compile_block(other, rows=ROWS, package=block.package)
    with pytest.raises(ValueError, match="one schedule"):
        rt.compile_block(module, rows=ROWS, package=block.package, schedule="mma")


def test_bad_inputs_are_refused(cpu_block):
    _, block = cpu_block
    with pytest.raises(ValueError, match="x must be float16"):
        block(torch.zeros(4, 64))
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 64\]"):
        block(torch.zeros(4, 32, dtype=torch.float16))
    if block.device is None:
        with pytest.raises(ValueError, match="built without a GPU"):
            block(torch.zeros(4, 64, dtype=torch.float16), out=torch.zeros(4, 10))


def test_a_deleted_block_is_gone_from_the_op(cpu_block):
    module, block = cpu_block
    b2 = rt.compile_block(module, rows=ROWS, package=block.package)
    handle = b2.handle
    del b2
    with pytest.raises(ValueError, match=f"handle {handle} was deleted"):
        torch.ops.rowfuse.block(_xin(64, (2,)), handle)


def test_a_module_that_is_no_chain_is_refused_with_the_compilers_message():
    class Cumsum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(32, 32)

        def forward(self, x):
            return torch.cumsum(self.fc(x), -1)

    with pytest.raises(rt.UnsupportedBlock, match="CumSum over features is row-owned"):
        rt.compile_block(Cumsum(), rows=8)


# ---- on the GPU ----


def prepare(out: Path) -> None:
    """Compiles the GPU half's packages into out/KIND/ (pkg/, block.onnx, state.pt)."""
    import shutil

    for kind in [*GPU_KINDS, "residual_mlp"]:
        module, _ = blocks.make(kind, small=True)
        d = out / kind
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        _, pkg = rt._compile(module, ROWS, None, str(d))
        for f in Path(pkg).iterdir():  # what the runtime loads travels, nothing else
            if f.name not in ("plan.json", "weights.bin", "librowfuse_pkg.so"):
                shutil.rmtree(f) if f.is_dir() else f.unlink()
        torch.save(module.state_dict(), d / "state.pt")
        print(f"prepared {d}")


def _prepared(kind: str):
    """(module with the prepared weights, block on the GPU, ONNX model path)."""
    d = PKGS / kind
    if not (d / "pkg" / "plan.json").exists():
        pytest.skip(f"{d} not prepared: python3 tests/python/test_torch_op.py prepare {PKGS}")
    module, _ = blocks.make(kind, small=True)
    module.load_state_dict(torch.load(d / "state.pt"))
    block = rt.compile_block(module, rows=ROWS, package=str(d / "pkg"))
    return module, block, str(d / "block.onnx")


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)


class HeadModel(torch.nn.Module):
    """A torch model around the block: PyTorch ops before and after it (exact scalings, so
    the fp64 comparison needs no allowance of its own)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block((x * 0.5).half()) * 2.0


@gpu
@pytest.mark.parametrize("kind", GPU_KINDS)
def test_gpu_compiled_model_matches_pytorch_fp64(kind):
    module, block, model = _prepared(kind)
    assert isinstance(block, rt.ChainBlock) and block.device.type == "cuda"
    c, n = block.in_width, block.out_width
    dev = block.device
    # a fresh cache per kind: Model.forward is one code object, and the kinds' recompiles
    # add up to dynamo's recompile limit, which fullgraph turns into a hard failure
    torch._dynamo.reset()
    compiled = torch.compile(Model(block), fullgraph=True)
    for lead in [(ROWS,), (7,), (2, 33), (1,)]:
        x = _xin(c, lead, SEED + sum(lead))
        y = block(x.to(dev))  # the op, eagerly
        torch.cuda.synchronize()
        assert tuple(y.shape) == (*lead, n) and y.dtype == torch.float32
        yh = y.cpu().double().numpy().reshape(-1, n)
        ref = _fp64(module, x).reshape(-1, n).numpy()
        _, bound64 = rt.chain_reference(model, x, fp64=True)
        _within(yh, ref, bound64, f"{kind} {lead} vs PyTorch fp64")
        mixed, bound = rt.chain_reference(model, x)
        _within(yh, mixed, bound, f"{kind} {lead} vs the mixed reference")
        # the compiled model: the block's Y then * 2 + 1, as eager torch computes it
        yc = compiled(x.to(dev).float())
        torch.cuda.synchronize()
        torch.testing.assert_close(yc, y * 2.0 + 1.0, rtol=0, atol=0)


@gpu
def test_gpu_compiled_model_around_the_block():
    """PyTorch ops before and after the block in one torch.compile'd graph (inductor) on
    [B, T, C] tokens, against the same model in eager PyTorch fp64 within the chain's bound."""
    module, block, model = _prepared("res_mlp_gelu")
    c, dev = block.in_width, block.device
    torch._dynamo.reset()
    compiled = torch.compile(HeadModel(block), fullgraph=True)
    print(f"seed {SEED}")
    x = torch.randn(4, 16, c, generator=torch.Generator().manual_seed(SEED))
    got = compiled(x.to(dev))
    torch.cuda.synchronize()
    x16 = (x * 0.5).half()
    ref = _fp64(module, x16).numpy() * 2.0
    _, bound = rt.chain_reference(model, x16, fp64=True)
    _within(got.cpu().numpy(), ref, 2.0 * bound.reshape(4, 16, c), "compiled model, fp64")


@gpu
@pytest.mark.parametrize("kind", ["gpt2_ffn", "classifier"])
def test_gpu_op_in_a_cuda_graph(kind):
    """The op captured in torch.cuda.graph, replayed on new X copied into the static input:
    Y of every replay within the mixed bound, replays bit-identical."""
    _, block, model = _prepared(kind)
    c, dev = block.in_width, block.device
    static_x = _xin(c, (2, 40)).to(dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            block(static_x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = block(static_x)
    for seed in (SEED + 1, SEED + 2):
        x = _xin(c, (2, 40), seed)
        static_x.copy_(x.to(dev))
        static_y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        first = static_y.clone()
        mixed, bound = rt.chain_reference(model, x)
        _within(first.cpu().numpy().reshape(-1, block.out_width), mixed, bound, "graph replay")
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(first, static_y), "two replays on the same X differ"


@gpu
def test_gpu_residual_mlp_through_the_op():
    """The residual MLP keeps its schedules (RowfuseBlock); through the op under
    torch.compile(fullgraph=True) and in a CUDA graph, checked by rf_mlp_compare."""
    from rowfuse.capi import clib

    module, block, _ = _prepared("residual_mlp")
    assert isinstance(block, rt.RowfuseBlock)
    w1, b1, w2, b2 = rt.kernel_weights(module)
    x = _xin(block.channels, (block.rows,))
    case = clib.case_of(x.numpy(), w1, b1, w2, b2)
    xd = x.cuda()
    torch._dynamo.reset()
    y = torch.compile(Model(block), fullgraph=True)(xd)
    torch.cuda.synchronize()
    eager = block(xd)
    v = clib.compare(eager.cpu().numpy(), case)
    print("eager:", v["message"])
    assert v["passed"], v["message"]
    torch.testing.assert_close(y, eager * 2.0 + 1.0, rtol=0, atol=0)
    g = torch.cuda.CUDAGraph()
    block(xd)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        yg = block(xd)
    yg.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    vg = clib.compare(yg.cpu().numpy(), case)
    assert vg["passed"], vg["message"]
    torch.testing.assert_close(yg * 2.0 + 1.0, y, rtol=0, atol=0)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "prepare":
        sys.exit("usage: python3 tests/python/test_torch_op.py prepare OUTDIR")
    prepare(Path(sys.argv[2]).resolve())
