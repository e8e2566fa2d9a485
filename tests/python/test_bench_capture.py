"""The Python bench's capture check (rowfuse.bench.harness): a peer whose CUDA Graph holds
fewer kernel nodes than it launches (its work sent to another stream) is refused, in the C
runtime's words, before anything is timed.

The refusal logic runs without a GPU, on a fake node count; its message is compared with
the format string of the C runtime's refusal (src/runtime/variant.c). The GPU cases (a
peer on another stream, on the legacy default stream, on the per-thread default stream,
and `python -m rowfuse.bench --plant-fault ...` end to end) run where CUDA is available.
"""

import os
import re
import subprocess
import sys

import pytest
from cli_util import env
from rowfuse.bench import harness as bench

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def c_refusal_format() -> str:
    """The C runtime's printf format for a graph with too few kernel nodes: the string
    literals of check_kernel_nodes' first RF_ERR, joined."""
    with open(os.path.join(REPO, "src", "runtime", "variant.c")) as f:
        text = f.read()
    body = text[text.index("static rf_status_t check_kernel_nodes") :]
    literal = r'"(?:[^"\\]|\\.)*"'
    fmt = re.search(r"RF_ERR\(\s*RF_CODE_\w+,\s*((?:" + literal + r"\s*)+)", body).group(1)
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', fmt))


def test_refusal_in_the_c_runtime_words():
    fmt = c_refusal_format()
    assert fmt.count("%") == 4, fmt  # name, "at least " or "", expected, found
    for name, expected, found in (("torch-eager", 1, 0), ("triton-fused", 2, 1)):
        assert bench.capture_refusal(name, expected, found) == fmt % (
            name,
            "at least ",
            expected,
            found,
        )


def test_refusal_only_below_the_expected_count():
    assert bench.capture_refusal("torch-eager", 1, 1) is None
    assert bench.capture_refusal("torch-eager", 1, 7) is None  # cuBLAS may launch several
    msg = bench.capture_refusal("torch-compile", 1, 0)
    assert "torch-compile" in msg
    assert "expected at least 1, found 0" in msg
    assert bench.OUTSIDE_STREAM in msg


def test_short_graph_refused_on_a_fake_count():
    v = bench.Variant("torch-eager", "PyTorch eager + graph", None, None)
    seen = []

    def count(handle):
        seen.append(handle)
        return {11: 0, 12: 1, 13: 4}[handle]

    with pytest.raises(bench.CaptureRefused) as e:
        bench.refuse_short_graph(v, 11, count)
    assert "torch-eager: kernel nodes in the captured graph: expected at least 1, found 0" in str(
        e.value
    )
    assert bench.OUTSIDE_STREAM in str(e.value)
    assert bench.refuse_short_graph(v, 12, count) == 1
    assert bench.refuse_short_graph(v, 13, count) == 4
    v.kernels_min = 2
    with pytest.raises(bench.CaptureRefused, match="expected at least 2, found 1"):
        bench.refuse_short_graph(v, 12, count)
    assert seen == [11, 12, 13, 12]  # the graph the capture made is the one counted


def test_capture_failure_names_the_cause():
    err = RuntimeError("CUDA error: operation not permitted when stream is capturing")
    msg = bench.capture_failure("torch-eager", err)
    assert msg.startswith("torch-eager: the CUDA Graph capture failed: CUDA error:")
    assert bench.OUTSIDE_STREAM in msg and "legacy default stream" in msg
    other = bench.capture_failure("torch-eager", RuntimeError("CUDA out of memory"))
    assert bench.OUTSIDE_STREAM not in other  # no cause claimed for an unrelated error


def test_plant_fault_option_is_validated():
    args = bench.build_parser().parse_args(
        ["--shapes", "49x48x96", "--plant-fault", "wrong-stream-created"]
    )
    assert args.plant_fault == "wrong-stream-created"
    with pytest.raises(SystemExit):
        bench.build_parser().parse_args(["--shapes", "49x48x96", "--plant-fault", "no-pad"])


# ---------------------------------------------------------------- on a GPU


def _cuda():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


gpu = pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU and torch")


def _variant(fault):
    import torch

    x = torch.randn(64, 48, device="cuda")
    y = torch.empty_like(x)

    def launch():
        torch.mul(x, 2.0, out=y)

    return bench.Variant("peer", "a test peer", bench.plant_wrong_stream(launch, fault), y)


@gpu
def test_gpu_correct_peer_captured():
    import torch

    x = torch.randn(64, 48, device="cuda")
    y = torch.empty_like(x)
    v = bench.Variant("peer", "a test peer", lambda: torch.mul(x, 2.0, out=y), y)
    bench.capture(v)
    assert v.result["kernel_nodes"] >= 1
    y.fill_(float("nan"))
    v.graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2.0)


@gpu
@pytest.mark.parametrize("fault", bench.WRONG_STREAMS)
def test_gpu_wrong_stream_refused(fault):
    v = _variant(fault)
    with pytest.raises(bench.CaptureRefused) as e:
        bench.capture(v)
    msg = str(e.value)
    print(f"{fault}: {msg}")
    assert msg.startswith("peer: ") and bench.OUTSIDE_STREAM in msg
    assert v.graph is None  # nothing to time


@gpu
@pytest.mark.parametrize("fault", bench.WRONG_STREAMS)
def test_gpu_bench_refuses_planted_peer(fault, tmp_path):
    out = tmp_path / "run.json"
    cmd = [sys.executable, "-m", "rowfuse.bench", "--shapes", "49x48x96", "--seed", "1"]
    cmd += ["--variants", "torch-eager", "--rounds", "1", "--obs", "5", "--control-obs", "0"]
    cmd += ["--b2b-replays", "1", "--b2b-samples", "1", "--plant-fault", fault, "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env())
    print(r.stderr[-2000:])
    assert r.returncode != 0
    assert "torch-eager" in r.stderr and bench.OUTSIDE_STREAM in r.stderr
    assert "FAILED: torch-eager" in r.stderr
