"""A chain package's block as cuBLASLt runs it: the suite bench's `cublaslt` peer.

Every linear and gated stage of the package's chain (plan.json and weights.bin, so the
weights are the package's fp16 W and fp32 biases) is one fp16 GEMM through PyTorch's
cuBLASLt path with the epilogue cuBLASLt has for it: bias + ReLU or bias + GELU (tanh form)
fused into the GEMM (`torch._addmm_activation`, cuBLASLt's RELU_BIAS / GELU_BIAS), bias
alone otherwise (`torch.addmm`, BIAS); what cuBLASLt has no epilogue for (SiLU and the
other activations, the gate's product, residual adds, norms, softmax) runs as PyTorch ops in
fp32 between the GEMMs. Weights are converted once, at construction. The GEMMs round their
output to fp16 (cuBLASLt's D type), as PyTorch fp16 does, so this computes the block the
way a framework user with cuBLASLt does, not rowfuse's function bit for bit; the suite
bench checks it against the module in fp64 like the other peers.
"""

from __future__ import annotations

import json
import os

# cuBLASLt's bias epilogues with an activation, by the chain's activation name
LT_EPILOGUE = {"relu": False, "gelu_tanh": True}  # name -> use_gelu


def _act(fn: str, z, alpha: float = 0.0):
    """The chain's activation `fn` (its parameter alpha where it has one) in PyTorch."""
    import torch
    import torch.nn.functional as F

    table = {
        "relu": torch.relu,
        "gelu_erf": F.gelu,
        "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
        "silu": F.silu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
        "identity": lambda t: t,
        "softplus": F.softplus,
        "exp": torch.exp,
        "sin": torch.sin,
        "leaky_relu": lambda t: F.leaky_relu(t, alpha),
        "elu": lambda t: F.elu(t, alpha),
        "mish": F.mish,
    }
    if fn not in table:
        raise ValueError(f"no activation {fn!r}")
    return table[fn](z)


class LtChain:
    """The chain of `package` on `device` (module docstring); call it on X [rows, C] fp16,
    get Y [rows, N_out] fp32."""

    def __init__(self, package: str, device="cuda"):
        import torch

        from rowfuse.torch import chain_weights

        plan = json.load(open(os.path.join(package, "plan.json")))
        ch = plan["chain"]
        wh, wf = chain_weights(package, ch)
        self.values = {int(v["id"]): v for v in ch["values"]}
        self.stages = ch["stages"]
        self.last = max(self.values)

        def mat(off, k, n):
            return torch.from_numpy(wh[off : off + k * n].reshape(k, n).copy()).to(device)

        def vec(off, n, dtype):
            if off < 0:
                return None
            return torch.from_numpy(wf[off : off + n].copy()).to(device=device, dtype=dtype)

        self.w = {}  # stage index -> prepared tensors
        for i, s in enumerate(self.stages):
            if s["op"] == "linear":
                self.w[i] = (mat(s["w"], s["k"], s["n"]), vec(s["b"], s["n"], torch.float16))
            elif s["op"] == "gated":
                self.w[i] = (
                    mat(s["wg"], s["k"], s["n"]),
                    vec(s["bg"], s["n"], torch.float16),
                    mat(s["wu"], s["k"], s["n"]),
                    vec(s["bu"], s["n"], torch.float16),
                )
            elif s["op"] == "norm":
                width = self.values[s["src"]]["width"]
                self.w[i] = (
                    vec(s.get("gamma", -1), width, torch.float32),
                    vec(s.get("beta", -1), width, torch.float32),
                )
        self.fused = sum(1 for s in self.stages if self._lt_act(s) is not None)

    @staticmethod
    def _lt_act(s: dict):
        """use_gelu of the cuBLASLt epilogue that takes s's bias and first activation, or
        None when cuBLASLt has none for it."""
        if s["op"] != "linear" or s["b"] < 0 or not s["epilogue"]:
            return None
        e = s["epilogue"][0]
        return LT_EPILOGUE.get(e["fn"]) if e["op"] == "act" else None

    def _gemm(self, x, w, b, use_gelu=None):
        import torch

        if use_gelu is not None:
            return torch._addmm_activation(b, x, w, use_gelu=use_gelu)
        return torch.addmm(b, x, w) if b is not None else torch.mm(x, w)

    def __call__(self, x16):
        import torch
        import torch.nn.functional as F

        env = {0: x16}
        for i, s in enumerate(self.stages):
            op = s["op"]
            if op == "linear":
                w, b = self.w[i]
                lt = self._lt_act(s)
                z = self._gemm(env[s["src"]], w, b, lt)
                epi = s["epilogue"][1:] if lt is not None else s["epilogue"]
                if epi:
                    z = z.float()
                for e in epi:
                    if e["op"] == "act":
                        z = _act(e["fn"], z, e.get("alpha", 0.0))
                    elif e["op"] == "add":
                        z = z + env[e["src"]].float()
                    else:
                        z = z * env[e["src"]].float()
            elif op == "gated":
                wg, bg, wu, bu = self.w[i]
                g = self._gemm(env[s["src"]], wg, bg)
                u = self._gemm(env[s["src"]], wu, bu)
                z = _act(s["fn"], g.float(), s.get("alpha", 0.0)) * u.float()
            elif op == "act":
                z = _act(s["fn"], env[s["src"]].float(), s.get("alpha", 0.0))
            elif op == "add":
                z = env[s["a"]].float() + env[s["b"]].float()
            else:
                x = env[s["src"]].float()
                gamma, beta = self.w[i]
                if s["kind"] == "layernorm":
                    z = F.layer_norm(x, (x.shape[-1],), gamma, beta, s["eps"])
                elif s["kind"] == "rmsnorm":
                    z = F.rms_norm(x, (x.shape[-1],), gamma, s["eps"])
                else:
                    z = torch.softmax(x, dim=-1)
            dt = torch.float16 if self.values[s["dst"]]["dtype"] == "f16" else torch.float32
            env[s["dst"]] = z.to(dt)
        return env[self.last].float()


def describe(lt: LtChain) -> str:
    n = sum(1 for s in lt.stages if s["op"] in ("linear", "gated"))
    gemms = n + sum(1 for s in lt.stages if s["op"] == "gated")
    return f"cuBLASLt: {gemms} GEMMs, {lt.fused} with a fused bias+activation epilogue"


__all__ = ["LT_EPILOGUE", "LtChain", "describe"]
