"""XLA as a peer: `jax.jit` of the residual MLP block with the block's numerics.

    H = fp16(ReLU(X W1 + b1)),  Y = ReLU(H W2 + b2 + X)

fp16 operands, fp32 accumulation (`preferred_element_type=float32` on both products), b1
added in fp32 before the ReLU, H rounded to fp16 once, Y in fp32: the function every peer
computes (docs/benchmarking.md, "Variants and peers").

JAX launches the compiled executable on its own stream (XLA's launches, possibly XLA's own
command buffers), so it cannot be captured in our CUDA graph, poisoned or bracketed by
CUDA events on torch's stream. The bench times one observation as the call plus
`block_until_ready()` (host completion) and takes its GPU span from the CUPTI kernel
records of the same interleaved observations (rowfuse.bench.spans, "order" attribution of
the records that are not our graph replays, each call holding the kernel count `calibrate`
measured). The check is the same comparison rule on the returned Y (a fresh array per call:
nothing to poison, so none is).

JAX is imported lazily, with XLA's preallocation of most of the GPU's memory turned off so
that it shares the device with torch, and XLA's command buffers on for every kernel
sequence (GRAPH_FLAG: one CUDA graph per call, which a careful user sets; on the H200 it
took the span at 49x48x96 from about 16 us to 3.5 us); `available()` says whether it can
be imported and sees a GPU.
"""

from __future__ import annotations

import os
import time


def available() -> str | None:
    """None when jax can be imported and sees a GPU, else the reason (for a FAILED row's
    message)."""
    try:
        jax, _ = _jax()
    except Exception as e:  # ImportError, or a broken install
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return f"jax not installed or not importable ({type(e).__name__}: {first})"
    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except Exception as e:  # a backend that fails to start
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return f"jax's backend did not start ({type(e).__name__}: {first})"
    if not gpus:
        return f"jax {jax.__version__} sees no GPU (backend {jax.default_backend()})"
    return None


def version() -> str:
    """jax's version, or "unavailable"."""
    try:
        return _jax()[0].__version__
    except Exception:
        return "unavailable"


# XLA's command buffers for every sequence of kernels (a CUDA graph per call instead of one
# launch per kernel), as a careful user sets it; added to XLA_FLAGS unless they set it
GRAPH_FLAG = "--xla_gpu_graph_min_graph_size=1"


def _jax():
    # before the first import of jax: share the GPU with torch instead of reserving 75%
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_gpu_graph_min_graph_size" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {GRAPH_FLAG}".strip()
    import jax
    import jax.numpy as jnp

    return jax, jnp


def block_fn():
    """The block as a jnp function of (x, w1, b1, w2, b2) -> y (not jitted)."""
    jax, jnp = _jax()

    def block(x, w1, b1, w2, b2):
        a = jnp.matmul(x, w1, preferred_element_type=jnp.float32)
        h = jnp.maximum(a + b1, 0.0).astype(jnp.float16)
        t = jnp.matmul(h, w2, preferred_element_type=jnp.float32) + b2 + x.astype(jnp.float32)
        return jnp.maximum(t, 0.0)

    return block


class XlaBlock:
    """The jitted block on device copies of the inputs (numpy fp16 x, w1, w2; fp32 b1, b2)."""

    def __init__(self, x, w1, b1, w2, b2, device_index: int = 0, platform: str = "gpu"):
        jax, _ = _jax()
        devs = [d for d in jax.devices() if d.platform == platform]
        if not devs:
            raise RuntimeError(f"jax sees no {platform} (backend {jax.default_backend()})")
        self.device = devs[min(device_index, len(devs) - 1)]
        self.args = tuple(jax.device_put(a, self.device) for a in (x, w1, b1, w2, b2))
        t0 = time.perf_counter()
        self.fn = jax.jit(block_fn())
        self.fn(*self.args).block_until_ready()  # compiles; later calls take jit's fast path
        self.compile_s = time.perf_counter() - t0
        self.jax_version = jax.__version__
        self.kernels = None  # set by calibrate
        self.kernel_names: list[str] = []

    def call(self):
        """One call, waited for: the unit of one observation."""
        return self.fn(*self.args).block_until_ready()

    def output(self):
        import numpy as np

        return np.asarray(self.call(), dtype=np.float32)

    def tuning(self) -> dict:
        flags = os.environ.get("XLA_FLAGS", "")
        return {
            "method": "jax.jit with XLA's compile-time GEMM autotuning and its command buffers "
            f"for every kernel sequence ({GRAPH_FLAG}, unless XLA_FLAGS set it); fp16 operands, "
            "preferred_element_type=float32 on both products",
            "jax": self.jax_version,
            "xla_flags": flags or "(none)",
            "compile_s": round(self.compile_s, 2),
            "kernels": self.kernels,
            "kernel_names": self.kernel_names,
        }


def calibrate(blk: XlaBlock, calls: int = 5) -> int:
    """Kernels per call, from the CUPTI records of `calls` synchronized calls (every call
    must hold the same count: the order attribution checks that the cut falls between
    calls). Sets blk.kernels and blk.kernel_names."""
    from rowfuse.bench import spans

    blk.call()  # anything lazy happens outside the counted calls
    with spans.CuptiSession() as s:
        for _ in range(calls):
            blk.call()
    n = len(s.trace.kernels)
    if n == 0 or n % calls:
        raise spans.SpanError(
            f"XLA: CUPTI saw {n} kernel records for {calls} calls (not a positive multiple)"
        )
    per = n // calls
    spans.attribute([k[:3] for k in s.trace.kernels], [per] * calls, "order")
    blk.kernels = per
    blk.kernel_names = sorted({k[3][:80] for k in sorted(s.trace.kernels)[:per]})
    return per
