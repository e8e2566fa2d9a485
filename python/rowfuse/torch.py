"""rowfuse as a drop-in torch module: a ctypes binding of the C runtime.

    import rowfuse.torch
    block = rowfuse.torch.compile_block(module, rows=49, package="pkg/", schedule="auto")
    y = block(x)                 # x: [rows, C] fp16 CUDA, contiguous -> y: [rows, C] fp32
    block(x, out=y)              # or into a caller's buffer (what graph capture wants)

`module` is the residual MLP block (two nn.Linear: fc1 C->H, fc2 H->C); its weights are
copied once to the device in the runtime's layout (W1 = fc1.weight^T [C,H] fp16, b1 fp32,
W2 = fc2.weight^T [H,C] fp16, b2 fp32). The kernels come from a package compiled ahead of
time by `rowfuse compile` for the module's (channels, hidden); no Python runs in the
kernels and no compiler runs here. "auto" takes the package's chosen schedule;
"persistent-smem", "persistent-gmem", "conventional" pick one; "cublaslt" is the vendor
baseline from the C runtime (needs no package).

Every call enqueues on torch's current stream and allocates nothing in the runtime, so the
call can be captured inside torch.cuda.graph. Wrong dtype, device, shape or a
non-contiguous input raise ValueError saying which and what was expected; runtime
failures raise RowfuseError with the C runtime's message.

The shared library is found from $ROWFUSE_RUNTIME_LIB, else build*/src/runtime/ under the
repository, else the system's loader path (librowfuse_runtime.so).
"""

from __future__ import annotations

import ctypes
import glob
import os

import torch
from torch import nn

SCHEDULES = ("persistent-smem", "persistent-gmem", "conventional", "cublaslt")


class RowfuseError(RuntimeError):
    """A C runtime call failed; the message is the runtime's status message."""


class _Allocator(ctypes.Structure):
    _fields_ = [
        ("alloc", ctypes.c_void_p),
        ("realloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
        ("ctx", ctypes.c_void_p),
    ]


class MlpArgs(ctypes.Structure):  # rf_mlp_args_t, kernel_abi.h
    _fields_ = [
        ("x", ctypes.c_void_p),
        ("w1", ctypes.c_void_p),
        ("b1", ctypes.c_void_p),
        ("w2", ctypes.c_void_p),
        ("b2", ctypes.c_void_p),
        ("h", ctypes.c_void_p),
        ("y", ctypes.c_void_p),
        ("rows", ctypes.c_int64),
    ]


class _DeviceInfo(ctypes.Structure):  # rf_device_info_t, runtime.h
    _fields_ = [
        ("ordinal", ctypes.c_int),
        ("name", ctypes.c_char * 128),
        ("cc_major", ctypes.c_int),
        ("cc_minor", ctypes.c_int),
        ("sm_count", ctypes.c_int),
        ("driver_version", ctypes.c_int),
        ("runtime_version", ctypes.c_int),
        ("total_mem", ctypes.c_size_t),
        ("clock_khz", ctypes.c_int),
        ("mem_clock_khz", ctypes.c_int),
    ]


_LIB = None
_DEVICES_OPENED: set[int] = set()


def library_path() -> str:
    env = os.environ.get("ROWFUSE_RUNTIME_LIB")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = sorted(
        glob.glob(os.path.join(root, "build*", "src", "runtime", "librowfuse_runtime.so"))
    )
    return found[0] if found else "librowfuse_runtime.so"


def _lib():
    global _LIB
    if _LIB is not None:
        return _LIB
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise RowfuseError(f"cannot load the rowfuse runtime library {path}: {e}") from e
    P, V = ctypes.POINTER, ctypes.c_void_p
    st = ctypes.c_void_p  # rf_status_t
    sigs = {
        "rf_status_message": (ctypes.c_char_p, [st]),
        "rf_status_free": (None, [st]),
        "rf_allocator_system": (_Allocator, []),
        "rf_device_open": (st, [ctypes.c_int, P(_DeviceInfo)]),
        "rf_pkg_load": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_pkg_destroy": (None, [V]),
        "rf_pkg_channels": (ctypes.c_int64, [V]),
        "rf_pkg_hidden": (ctypes.c_int64, [V]),
        "rf_pkg_schedule": (ctypes.c_char_p, [V]),
        "rf_variant_create_pkg": (st, [_Allocator, V, ctypes.c_char_p, P(V)]),
        "rf_variant_create_cublaslt": (st, [_Allocator, ctypes.c_int64, ctypes.c_int64, P(V)]),
        "rf_variant_destroy": (None, [V]),
        "rf_variant_expected_kernels": (None, [V, P(ctypes.c_int), P(ctypes.c_int)]),
        "rf_variant_launch": (st, [V, P(MlpArgs), V]),
    }
    for name, (res, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, argtypes
    _LIB = lib
    return lib


def _check(status, what: str) -> None:
    if status:
        lib = _lib()
        msg = lib.rf_status_message(status).decode(errors="replace")
        lib.rf_status_free(status)
        raise RowfuseError(f"{what}: {msg}")


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

    def __init__(self, w1, b1, w2, b2, rows: int, schedule: str = "auto", package=None):
        super().__init__()
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        if schedule != "auto" and schedule not in SCHEDULES:
            raise ValueError(f"schedule must be 'auto' or one of {SCHEDULES}, got {schedule!r}")
        if w1.dim() != 2 or w2.dim() != 2 or w1.shape[1] != w2.shape[0]:
            raise ValueError(f"weights do not chain: W1 {tuple(w1.shape)}, W2 {tuple(w2.shape)}")
        self.rows, self.channels, self.hidden = rows, int(w1.shape[0]), int(w1.shape[1])
        dev = w1.device if w1.is_cuda else torch.device("cuda", torch.cuda.current_device())
        self.device = dev
        lib = _lib()
        _open_device(dev.index or 0)
        self._alloc = lib.rf_allocator_system()
        self._pkg = ctypes.c_void_p()
        self._variant = ctypes.c_void_p()
        if schedule != "cublaslt":
            if package is None:
                raise ValueError(f"schedule {schedule!r} needs package= (a `rowfuse compile` dir)")
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
        else:
            _check(
                lib.rf_variant_create_cublaslt(
                    self._alloc, self.channels, self.hidden, ctypes.byref(self._variant)
                ),
                "creating the cuBLASLt variant",
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
        return f"{shape}, schedule={self.schedule}"


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


def compile_block(module, rows: int, schedule: str = "auto", package=None) -> RowfuseBlock:
    """A RowfuseBlock computing `module` (the residual MLP block) for `rows` rows."""
    fc1, fc2 = _two_linears(module)
    with torch.no_grad():
        return RowfuseBlock(
            fc1.weight.t(), fc1.bias, fc2.weight.t(), fc2.bias, rows, schedule, package
        )


def block_from_tensors(w1, b1, w2, b2, rows: int, schedule: str, package=None) -> RowfuseBlock:
    """The same from tensors already in the runtime's layout (W1 [C,H], W2 [H,C])."""
    return RowfuseBlock(w1, b1, w2, b2, rows, schedule, package)
