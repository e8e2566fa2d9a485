"""rowfuse as a drop-in torch module: a ctypes binding of the C runtime.

    import rowfuse.torch
    block = rowfuse.torch.compile_block(module, rows=49, package="pkg/")
    y = block(x)                 # x: [rows, C] fp16 CUDA, contiguous -> y: [rows, C] fp32
    block(x, out=y)              # or into a caller's buffer (what graph capture wants)

`module` is the residual MLP block (two nn.Linear: fc1 C->H, fc2 H->C). The kernels and the
plan come from a package made ahead of time by `rowfuse compile` (which verified the
model it was compiled from); no compiler runs here. compile_block checks, before it
returns, that the module computes the residual MLP block (its fp64 output against the C
reference interpreter on random rows) and that the package was compiled from this
module's weights (plan.json's graph_hash against the hash of the module's weights rounded
to fp16); the block then runs the package's weights. weights="module" instead loads the
module's own weights into the runtime (and says so in `weights_source`), for a package
compiled from another model of the same shape. schedule="auto" takes the plan's choice;
any name of rowfuse.capi.names.SCHEDULES picks one.

Every call enqueues on torch's current stream and allocates nothing in the runtime, so the
call can be captured inside torch.cuda.graph. Wrong dtype, device, shape or a
non-contiguous input raise ValueError saying which and what was expected; runtime
failures raise RowfuseError with the C runtime's message.

The runtime library is found from $ROWFUSE_RUNTIME_LIB, else build*/src/runtime/ under the
repository, else the loader path (librowfuse_runtime.so).
"""

from __future__ import annotations

import ctypes
import os

import torch
from torch import nn

from rowfuse.capi import cabi, clib
from rowfuse.capi.names import SCHEDULES, VENDOR_SCHEDULE

RowfuseError = clib.RowfuseError  # a C runtime call failed; its status message
MlpArgs = cabi.MlpArgs
_Allocator, _DeviceInfo = cabi.Allocator, cabi.DeviceInfo

_LIB = None
_DEVICES_OPENED: set[int] = set()


def library_path() -> str:
    return clib.library_path("ROWFUSE_RUNTIME_LIB", "librowfuse_runtime.so")


def _lib():
    global _LIB
    if _LIB is not None:
        return _LIB
    P, V, st = ctypes.POINTER, ctypes.c_void_p, ctypes.c_void_p
    sigs = {
        "rf_device_open": (st, [ctypes.c_int, P(_DeviceInfo)]),
        "rf_pkg_load": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_pkg_load_nogpu": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_pkg_destroy": (None, [V]),
        "rf_pkg_channels": (ctypes.c_int64, [V]),
        "rf_pkg_hidden": (ctypes.c_int64, [V]),
        "rf_pkg_schedule": (ctypes.c_char_p, [V]),
        "rf_pkg_graph_hash": (ctypes.c_char_p, [V]),
        "rf_pkg_upload_weights_to": (st, [V, V, V, V, V]),
        "rf_variant_create_pkg": (st, [_Allocator, V, ctypes.c_char_p, P(V)]),
        "rf_variant_destroy": (None, [V]),
        "rf_variant_expected_kernels": (None, [V, P(ctypes.c_int), P(ctypes.c_int)]),
        "rf_variant_launch": (st, [V, P(MlpArgs), V]),
    }
    _LIB = clib.bind(library_path(), sigs, "rowfuse runtime library")
    return _LIB


def _check(status, what: str) -> None:
    clib.raise_status(_lib(), status, what)


def _open_device(index: int) -> None:
    if index in _DEVICES_OPENED:
        return
    info = _DeviceInfo()
    _check(_lib().rf_device_open(index, ctypes.byref(info)), f"opening CUDA device {index}")
    _DEVICES_OPENED.add(index)


def _require(t, name, dtype, shape, device):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise ValueError(f"{name}: expected dtype {dtype}, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous (row-major) tensor; call .contiguous()")
    if t.device.type != "cuda" or (device is not None and t.device != device):
        want = device or "a CUDA device"
        raise ValueError(f"{name}: expected a tensor on {want}, got {t.device}")


class RowfuseBlock(nn.Module):
    """The residual MLP block run by the rowfuse C runtime (see the module docstring)."""

    def __init__(self, w1, b1, w2, b2, rows: int, schedule: str, package, weights: str):
        super().__init__()
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        if schedule != "auto" and schedule not in SCHEDULES:
            raise ValueError(f"schedule must be 'auto' or one of {SCHEDULES}, got {schedule!r}")
        self.rows, self.channels, self.hidden = rows, int(w1.shape[0]), int(w1.shape[1])
        lib = _lib()
        index = (w1.device.index or 0) if w1.is_cuda else 0
        _open_device(index)  # the C runtime says so first when there is no usable GPU
        dev = torch.device("cuda", index)
        self.device = dev
        self._alloc = lib.rf_allocator_system()
        self._pkg = ctypes.c_void_p()
        self._variant = ctypes.c_void_p()
        _check(
            lib.rf_pkg_load(self._alloc, os.fsencode(package), ctypes.byref(self._pkg)),
            f"loading package {package}",
        )
        pc, ph = lib.rf_pkg_channels(self._pkg), lib.rf_pkg_hidden(self._pkg)
        if (pc, ph) != (self.channels, self.hidden):
            raise ValueError(
                f"package {package} is compiled for channels={pc}, hidden={ph}; the module "
                f"has channels={self.channels}, hidden={self.hidden}"
            )
        if schedule == "auto":
            schedule = lib.rf_pkg_schedule(self._pkg).decode()
        _check(
            lib.rf_variant_create_pkg(
                self._alloc, self._pkg, schedule.encode(), ctypes.byref(self._variant)
            ),
            f"schedule {schedule}",
        )
        self.schedule = schedule
        kmin, exact = ctypes.c_int(), ctypes.c_int()
        lib.rf_variant_expected_kernels(self._variant, ctypes.byref(kmin), ctypes.byref(exact))
        self.kernel_count = kmin.value if exact.value else None
        # Weights in the runtime's layout, owned by this module (buffers move with it).
        self.register_buffer("w1", w1.detach().to(dev, torch.float16).contiguous())
        self.register_buffer("b1", b1.detach().to(dev, torch.float32).contiguous())
        self.register_buffer("w2", w2.detach().to(dev, torch.float16).contiguous())
        self.register_buffer("b2", b2.detach().to(dev, torch.float32).contiguous())
        self.weights_source = weights
        if weights == "package":  # the package's own weights.bin replaces the copies
            bufs = (self.w1, self.b1, self.w2, self.b2)
            _check(
                lib.rf_pkg_upload_weights_to(self._pkg, *(b.data_ptr() for b in bufs)),
                f"uploading the weights of {package}",
            )
        # H scratch for schedules that route H through global memory.
        self.register_buffer("h", torch.empty(rows, self.hidden, dtype=torch.float16, device=dev))
        self._args = MlpArgs()

    def forward(self, x, out=None):
        _require(x, "x", torch.float16, (self.rows, self.channels), self.device)
        if out is None:
            out = torch.empty(self.rows, self.channels, dtype=torch.float32, device=self.device)
        else:
            _require(out, "out", torch.float32, (self.rows, self.channels), self.device)
        a = self._args
        a.x, a.w1, a.b1 = x.data_ptr(), self.w1.data_ptr(), self.b1.data_ptr()
        a.w2, a.b2, a.h = self.w2.data_ptr(), self.b2.data_ptr(), self.h.data_ptr()
        a.y, a.rows = out.data_ptr(), self.rows
        stream = torch.cuda.current_stream(self.device).cuda_stream
        _check(
            _lib().rf_variant_launch(self._variant, ctypes.byref(a), ctypes.c_void_p(stream)),
            f"launching {self.schedule}",
        )
        return out

    def __del__(self):
        lib = _LIB
        if lib is None:
            return
        if getattr(self, "_variant", None):
            lib.rf_variant_destroy(self._variant)
            self._variant = ctypes.c_void_p()
        if getattr(self, "_pkg", None):
            lib.rf_pkg_destroy(self._pkg)
            self._pkg = ctypes.c_void_p()

    def extra_repr(self) -> str:
        shape = f"rows={self.rows}, channels={self.channels}, hidden={self.hidden}"
        return f"{shape}, schedule={self.schedule}, weights={self.weights_source}"


def _two_linears(module):
    lins = [m for m in module.modules() if isinstance(m, nn.Linear)]
    if len(lins) != 2:
        raise ValueError(
            f"expected the residual MLP block (two nn.Linear), found {len(lins)} nn.Linear"
        )
    fc1, fc2 = lins
    if fc1.out_features != fc2.in_features or fc2.out_features != fc1.in_features:
        raise ValueError(
            f"nn.Linear shapes do not form C->H->C: {fc1.in_features}->{fc1.out_features}, "
            f"{fc2.in_features}->{fc2.out_features}"
        )
    if fc1.bias is None or fc2.bias is None:
        raise ValueError("both nn.Linear layers need a bias (the block adds b1 and b2)")
    return fc1, fc2


def kernel_weights(module):
    """The module's weights in the kernels' layout and precision, as numpy arrays:
    W1 [C,H] fp16, b1 f32, W2 [H,C] fp16, b2 f32."""
    fc1, fc2 = _two_linears(module)
    with torch.no_grad():
        return (
            fc1.weight.t().detach().cpu().half().numpy(),
            fc1.bias.detach().cpu().float().numpy(),
            fc2.weight.t().detach().cpu().half().numpy(),
            fc2.bias.detach().cpu().float().numpy(),
        )


def verify_module(module, rows: int = 8, seed: int = 2026) -> None:
    """Raises ValueError unless `module` computes the residual MLP block: on random rows
    from the one generator, the module in fp64 (its weights rounded to fp16, as the kernels
    hold them) must match the C reference interpreter in fp64 to 1e-9 relative."""
    import copy

    import numpy as np

    w1, b1, w2, b2 = kernel_weights(module)
    c, h = w1.shape
    case = clib.mlp_case(rows, c, h, seed, reference=False)
    ref = clib.reference(case.x, w1, b1, w2, b2)
    m = copy.deepcopy(module).cpu().double()
    fc1, fc2 = _two_linears(m)
    with torch.no_grad():
        fc1.weight.copy_(torch.from_numpy(w1.astype(np.float64)).t())
        fc2.weight.copy_(torch.from_numpy(w2.astype(np.float64)).t())
        got = m(torch.from_numpy(case.x.astype(np.float64))).numpy()
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
    if not np.isfinite(err) or err > 1e-9:
        raise ValueError(
            f"the module does not compute the residual MLP block ReLU(ReLU(X W1 + b1) W2 + b2 "
            f"+ X): its fp64 output is {err:.3g} (rel. L2) from the reference on {rows} rows"
        )


def compile_block(
    module, rows: int, package, schedule: str = "auto", weights: str = "package"
) -> RowfuseBlock:
    """A RowfuseBlock computing `module` for `rows` rows with the kernels of `package`.
    weights="package" (default) requires the package to have been compiled from this
    module's weights and runs them; weights="module" loads the module's weights instead."""
    if weights not in ("package", "module"):
        raise ValueError(f"weights must be 'package' or 'module', got {weights!r}")
    if schedule == VENDOR_SCHEDULE:
        raise ValueError(f"{VENDOR_SCHEDULE} runs from the C runtime (rowfuse bench --c)")
    verify_module(module)
    w1, b1, w2, b2 = kernel_weights(module)
    lib = _lib()
    if weights == "package":
        pkg = ctypes.c_void_p()
        _check(
            lib.rf_pkg_load_nogpu(
                lib.rf_allocator_system(), os.fsencode(package), ctypes.byref(pkg)
            ),
            f"loading package {package}",
        )
        want = lib.rf_pkg_graph_hash(pkg).decode()
        lib.rf_pkg_destroy(pkg)
        have = clib.weights_hash(w1, b1, w2, b2)
        if have != want:
            raise ValueError(
                f"package {package} was compiled from other weights (graph hash {want}, the "
                f"module's {have}): recompile it from this module, or pass weights='module'"
            )
    t = [torch.from_numpy(a) for a in (w1, b1, w2, b2)]
    return RowfuseBlock(*t, rows=rows, schedule=schedule, package=package, weights=weights)
