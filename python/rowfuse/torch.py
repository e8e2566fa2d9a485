"""rowfuse from PyTorch: compile a block and call it as a module or a torch.library op.

    import rowfuse.torch
    block = rowfuse.torch.compile_block(module, rows=64)   # exports, compiles, loads
    y = block(x)          # x: [..., C] fp16 CUDA -> y: [..., N_out] fp32, on torch's stream
    model.ffn = block     # works under torch.compile(fullgraph=True) and torch.cuda.graph

compile_block exports `module` (rowfuse.export), runs `rowfuse compile` on it and loads the
package it wrote; `package="pkg/"` loads a package made ahead of time instead. A module
that is not a block rowfuse compiles is refused with the compiler's message
(UnsupportedBlock). The block's forward is the custom op `rowfuse::block(Tensor x, int
handle) -> Tensor` (torch.ops.rowfuse.block): the handle names the loaded block, and the
op's fake implementation gives Y's shape [..., N_out] and dtype float32 from X's, so a
model calling it traces under torch.compile(fullgraph=True). Every call enqueues the
package's kernels on torch's current stream (one; a chain's conventional schedule one per
linear) and allocates nothing but Y and, for the conventional schedule, the scratch between
its kernels (both from torch's allocator), so it can be captured inside torch.cuda.graph.
The weight-streaming kernel's scratch (partials and counters) is the block's own, made and
zeroed at load for the rows the plan was made for and on the first call at any other row
count (so a first call at the planned rows inside a CUDA graph capture captures no
zeroing): one such call in flight per block at a time.

Two kinds of package:
- a chain package (any chain of row-local stages: linears, activations, gated products,
  residual adds, norms): X [..., C] is flattened to rows (any count), Y is [..., N_out].
  Without a GPU the op runs on CPU tensors the C reference of the chain in the plan's mixed
  precision (what the kernel promises, slowly): for tests and tracing, not for speed. A
  given package is checked against the module: every linear stage's fp16 weights and fp32
  bias must be those of one of the module's nn.Linear layers, each layer used once.
- the residual MLP (ReLU(fp16(ReLU(X W1 + b1)) W2 + b2 + X), two nn.Linear), which keeps
  its own schedules (RowfuseBlock: X has exactly the package's rows, Y is [..., C]; a GPU
  is needed). The module is checked to compute that block, and a given package to have
  been compiled from its weights (plan.json's graph_hash); weights="module" instead loads
  the module's own weights into the runtime (and says so in `weights_source`).
  schedule="auto" takes the plan's choice; any name of rowfuse.capi.names.SCHEDULES picks
  one. block(x, out=y) writes into a caller's buffer (eager only, not through the op).

Wrong dtype, device or width raise ValueError saying which and what was expected; runtime
failures raise RowfuseError with the C runtime's message. The runtime library is
$ROWFUSE_RUNTIME_LIB, else the one installed with this package; the rowfuse command is
found as rowfuse.capi.locate.cli says.
"""

from __future__ import annotations

import copy
import ctypes
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import weakref

import numpy as np
import torch
from torch import nn

from rowfuse.capi import cabi, clib, locate
from rowfuse.capi.names import SCHEDULES, VENDOR_SCHEDULE

RowfuseError = clib.RowfuseError  # a C runtime call failed; its status message
MlpArgs = cabi.MlpArgs
_Allocator, _DeviceInfo = cabi.Allocator, cabi.DeviceInfo

_LIB = None
_REF = None
_DEVICES_OPENED: set[int] = set()


class UnsupportedBlock(ValueError):
    """The module is not a block rowfuse compiles; the message is the compiler's."""


def library_path() -> str:
    return clib.library_path("ROWFUSE_RUNTIME_LIB", "librowfuse_runtime.so")


def _lib():
    global _LIB
    if _LIB is not None:
        return _LIB
    P, V, st, i64 = ctypes.POINTER, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
    sigs = {
        "rf_device_open": (st, [ctypes.c_int, P(_DeviceInfo)]),
        "rf_pkg_load": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_pkg_load_nogpu": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_pkg_destroy": (None, [V]),
        "rf_pkg_channels": (i64, [V]),
        "rf_pkg_hidden": (i64, [V]),
        "rf_pkg_schedule": (ctypes.c_char_p, [V]),
        "rf_pkg_graph_hash": (ctypes.c_char_p, [V]),
        "rf_pkg_upload_weights_to": (st, [V, V, V, V, V]),
        "rf_variant_create_pkg": (st, [_Allocator, V, ctypes.c_char_p, P(V)]),
        "rf_variant_destroy": (None, [V]),
        "rf_variant_expected_kernels": (None, [V, P(ctypes.c_int), P(ctypes.c_int)]),
        "rf_variant_launch": (st, [V, P(MlpArgs), V]),
        "rf_chain_pkg_load": (st, [_Allocator, ctypes.c_char_p, P(V)]),
        "rf_chain_pkg_destroy": (None, [V]),
        "rf_chain_pkg_in_width": (i64, [V]),
        "rf_chain_pkg_out_width": (i64, [V]),
        "rf_chain_pkg_kernel_name": (ctypes.c_char_p, [V]),
        "rf_chain_pkg_launch": (st, [V, P(cabi.ChainArgs), V]),
    }
    _LIB = clib.bind(library_path(), sigs, "rowfuse runtime library")
    return _LIB


def _ref_lib():
    """librowfuse.so with the chain reference of an ONNX model (src/chain/api.c)."""
    global _REF
    if _REF is None:
        V = ctypes.c_void_p
        sigs = {
            "rf_chain_onnx_reference": (
                V,
                [ctypes.c_char_p, V, ctypes.c_int64, ctypes.c_int, V, V, ctypes.c_char_p]
                + [ctypes.c_size_t, V],
            ),
        }
        _REF = clib.bind(clib.library_path(), sigs, "rowfuse library")
    return _REF


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


def chain_reference(model: str, x, fp64: bool = False):
    """The C reference of the chain of ONNX `model` on fp16 rows x ([rows, C] or [..., C],
    numpy or torch): (y, bound), float64 arrays [rows, N_out]. mixed (default): the plan's
    precision, and bound per element is what a kernel following the plan may differ from y;
    fp64=True: the exact function of the model's weights, and bound is how far the plan's
    arithmetic (fp16 weights and stored values, fp32 accumulation) may move a kernel's
    output from it."""
    lib = _ref_lib()
    widths = (ctypes.c_int64 * 3)()
    path = os.fsencode(model)
    st = lib.rf_chain_onnx_reference(path, None, 0, 0, None, None, None, 0, widths)
    clib.raise_status(lib, st, f"the chain of {model}")
    cin, cout = widths[0], widths[1]
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x16 = np.ascontiguousarray(np.asarray(x, dtype=np.float16).reshape(-1, cin))
    rows = x16.shape[0]
    y, bound = np.zeros((rows, cout)), np.zeros((rows, cout))
    if rows:
        bits = x16.view(np.uint16)
        st = lib.rf_chain_onnx_reference(
            path,
            bits.ctypes.data,
            rows,
            0 if fp64 else 1,
            y.ctypes.data,
            bound.ctypes.data,
            None,
            0,
            None,
        )
        clib.raise_status(lib, st, f"the reference of {model}")
    return y, bound


# ---- the torch.library op ----
#
# handle -> the block (weakly: deleting the module unloads its package) and its widths.
_BLOCKS: dict[int, weakref.ref] = {}
_WIDTHS: dict[int, tuple[int, int]] = {}
_HANDLES = itertools.count(1)


def _register(block) -> int:
    handle = next(_HANDLES)
    _BLOCKS[handle] = weakref.ref(block)
    _WIDTHS[handle] = (block.in_width, block.out_width)
    return handle


def _widths(handle: int) -> tuple[int, int]:
    if handle not in _WIDTHS:
        raise ValueError(f"rowfuse::block: no block has handle {handle} (it was deleted?)")
    return _WIDTHS[handle]


def _check_x(x: torch.Tensor, handle: int) -> tuple[int, int]:
    cin, cout = _widths(handle)
    if x.dtype != torch.float16:
        raise ValueError(f"rowfuse::block: x must be float16 (the kernels' X), got {x.dtype}")
    if x.dim() < 1 or x.shape[-1] != cin:
        raise ValueError(
            f"rowfuse::block: x must be [..., {cin}] (the block's input width), got "
            f"{tuple(x.shape)}"
        )
    return cin, cout


@torch.library.custom_op(
    "rowfuse::block", mutates_args=(), schema="(Tensor x, int handle) -> Tensor"
)
def block_op(x: torch.Tensor, handle: int) -> torch.Tensor:
    """Y [..., N_out] float32 of the loaded block `handle` on X [..., C] float16."""
    _check_x(x, handle)
    ref = _BLOCKS.get(handle)
    block = ref() if ref is not None else None
    if block is None:
        raise ValueError(f"rowfuse::block: the block of handle {handle} was deleted")
    return block._run(x)


@block_op.register_fake
def _block_fake(x: torch.Tensor, handle: int) -> torch.Tensor:
    _, cout = _check_x(x, handle)
    return x.new_empty((*x.shape[:-1], cout), dtype=torch.float32)


class _Loaded(nn.Module):
    """What both block kinds share: the op handle, forward through the op, no copies."""

    in_width: int
    out_width: int

    def forward(self, x, out=None):
        if out is None:
            return torch.ops.rowfuse.block(x, self.handle)
        return self._launch_into(x, out)

    def __deepcopy__(self, memo):
        raise TypeError(f"{type(self).__name__} holds a loaded package and cannot be copied")

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} holds a loaded package and cannot be pickled")


def _aligned(x: torch.Tensor) -> torch.Tensor:
    """x contiguous and 16-byte aligned (the kernels' loads), copied only when it is not."""
    x = x.contiguous()
    return x if x.data_ptr() % 16 == 0 else x.clone()


def stream_scratch_bytes(kernel: dict, rows: int) -> int:
    """Bytes of scratch a chain_stream kernel (its plan.json entry) needs at `rows`: fp32
    partials, then the int32 counters of every row tile (the runtime's rule)."""
    tiles = -(-rows // int(kernel["tile_rows"]))
    per_row, per_tile = kernel["scratch_partial_per_row"], kernel["scratch_counters_per_tile"]
    return 4 * (rows * int(per_row) + tiles * int(per_tile))


class ChainBlock(_Loaded):
    """A chain package run by the rowfuse C runtime (see the module docstring)."""

    def __init__(self, package: str, model: str | None, rows: int, device=None, tmp=None):
        super().__init__()
        self.package = os.fspath(package)
        self.plan = _read_plan(self.package)
        ch = self.plan["chain"]
        self.in_width, self.out_width = int(ch["in_width"]), int(ch["out_width"])
        self.rows = rows  # the rows the plan was made for; any count runs
        self.model = model
        self.kernel_name = self.plan["kernels"][0]["name"] if self.plan.get("kernels") else None
        # the conventional schedule's scratch row between its kernels (fp16 elements)
        conv = str(self.plan.get("schedule", "")).startswith("conventional")
        self._aux_row = int(ch.get("aux_row", 0)) if conv else None
        # the weight-streaming kernel's partials and counters: the block's own, per row
        # count, zeroed once (its reducers reset the counters for the next launch)
        kernels = self.plan.get("kernels") or [{}]
        self._stream = kernels[0] if kernels[0].get("mode") == "chain_stream" else None
        self._stream_scratch: dict[int, torch.Tensor] = {}
        self._pkg = ctypes.c_void_p()
        self.device = None
        if device is not None or torch.cuda.is_available():
            dev = torch.device(device if device is not None else "cuda")
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            lib = _lib()
            _open_device(index)
            with torch.cuda.device(index):
                _check(
                    lib.rf_chain_pkg_load(
                        lib.rf_allocator_system(),
                        os.fsencode(self.package),
                        ctypes.byref(self._pkg),
                    ),
                    f"loading chain package {self.package}",
                )
            got = (lib.rf_chain_pkg_in_width(self._pkg), lib.rf_chain_pkg_out_width(self._pkg))
            if got != (self.in_width, self.out_width):
                raise ValueError(
                    f"{self.package}: the runtime reads widths {got}, plan.json "
                    f"{(self.in_width, self.out_width)}"
                )
            wh, wf = chain_weights(self.package, ch)
            # at least one element each: the kernel ABI wants non-null pointers
            dev = self.device
            self._wh = torch.from_numpy(wh if wh.size else np.zeros(8, np.float16)).to(dev)
            self._wf = torch.from_numpy(wf if wf.size else np.zeros(8, np.float32)).to(dev)
            if self._stream is not None and self.rows:
                self._scratch_for(int(self.rows))
        self.handle = _register(self)
        self._tmp = tmp
        if tmp is not None:  # the package compile_block made: removed with the block
            weakref.finalize(self, shutil.rmtree, tmp, True)

    def _scratch_for(self, rows: int) -> torch.Tensor:
        """The weight-streaming kernel's scratch at `rows`: made and zeroed once (its
        reducers reset the counters for the next launch)."""
        scratch = self._stream_scratch.get(rows)
        if scratch is None:
            nbytes = stream_scratch_bytes(self._stream, rows)
            scratch = torch.zeros(nbytes, dtype=torch.uint8, device=self.device)
            self._stream_scratch[rows] = scratch
        return scratch

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        if x.device.type == "cpu":
            return self._reference(x).reshape(*lead, self.out_width)
        y = torch.empty((*lead, self.out_width), dtype=torch.float32, device=x.device)
        self._launch_into(x, y)
        return y

    def _reference(self, x: torch.Tensor) -> torch.Tensor:
        if self.model is None or not os.path.exists(self.model):
            raise ValueError(
                f"rowfuse::block on CPU runs the chain's C reference, which needs the model "
                f"the package {self.package} was compiled from ({self.model or 'unknown'})"
            )
        y, _ = chain_reference(self.model, x)
        return torch.from_numpy(y.astype(np.float32))

    def _launch_into(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.device is None or not self._pkg:
            raise ValueError(
                f"{self.package}: this block was built without a GPU; it runs on CPU tensors "
                "only (the C reference)"
            )
        for name, t, dtype, width in (
            ("x", x, torch.float16, self.in_width),
            ("out", y, torch.float32, self.out_width),
        ):
            if t.dtype != dtype or t.shape[-1] != width or t.device != self.device:
                raise ValueError(
                    f"{name}: expected [..., {width}] {dtype} on {self.device}, got "
                    f"{tuple(t.shape)} {t.dtype} on {t.device}"
                )
        rows = x.numel() // self.in_width
        if y.numel() != rows * self.out_width or not y.is_contiguous() or y.data_ptr() % 16:
            raise ValueError(
                f"out: expected a contiguous, 16-byte aligned tensor of {rows} rows x "
                f"{self.out_width}, got {tuple(y.shape)}"
            )
        if rows == 0:
            return y
        x = _aligned(x)
        ptrs = (x.data_ptr(), self._wh.data_ptr(), self._wf.data_ptr(), y.data_ptr())
        a = cabi.ChainArgs(*ptrs, rows)
        if self._aux_row is not None:
            # the values between the conventional schedule's kernels, from torch's allocator
            # on the current stream (so a CUDA graph capture owns it like Y)
            nbytes = max(16, 2 * rows * self._aux_row)
            scratch = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            a.scratch, a.scratch_bytes = scratch.data_ptr(), nbytes
        elif self._stream is not None:
            scratch = self._scratch_for(rows)
            a.scratch, a.scratch_bytes = scratch.data_ptr(), scratch.numel()
        stream = torch.cuda.current_stream(self.device).cuda_stream
        _check(
            _lib().rf_chain_pkg_launch(self._pkg, ctypes.byref(a), ctypes.c_void_p(stream)),
            f"launching {self.kernel_name}",
        )
        return y

    def __del__(self):
        _BLOCKS.pop(getattr(self, "handle", None), None)
        if _LIB is not None and getattr(self, "_pkg", None):
            _LIB.rf_chain_pkg_destroy(self._pkg)
            self._pkg = ctypes.c_void_p()

    def extra_repr(self) -> str:
        where = self.device or "cpu (the C reference)"
        return (
            f"in_width={self.in_width}, out_width={self.out_width}, rows={self.rows}, "
            f"kernel={self.kernel_name}, device={where}"
        )


class RowfuseBlock(_Loaded):
    """The residual MLP block run by the rowfuse C runtime (see the module docstring)."""

    def __init__(self, w1, b1, w2, b2, rows: int, schedule: str, package, weights: str, tmp=None):
        super().__init__()
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        if schedule != "auto" and schedule not in SCHEDULES:
            raise ValueError(f"schedule must be 'auto' or one of {SCHEDULES}, got {schedule!r}")
        self.rows, self.channels, self.hidden = rows, int(w1.shape[0]), int(w1.shape[1])
        self.in_width = self.out_width = self.channels
        self.package = os.fspath(package)
        lib = _lib()
        if w1.is_cuda:
            index = w1.device.index or 0
        else:  # torch's current device; the C runtime says so when there is no GPU
            index = torch.cuda.current_device() if torch.cuda.is_available() else 0
        _open_device(index)
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
        self.handle = _register(self)
        if tmp is not None:
            weakref.finalize(self, shutil.rmtree, tmp, True)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty((*x.shape[:-1], self.channels), dtype=torch.float32, device=x.device)
        self._launch_into(x, y)
        return y

    def _launch_into(self, x, out):
        if x.dim() != 2 and x.numel() == self.rows * self.channels and x.shape[-1] == self.channels:
            x = x.reshape(self.rows, self.channels)  # [B, T, C] tokens: B*T rows
            out = out.view(self.rows, self.channels)
        _require(x, "x", torch.float16, (self.rows, self.channels), self.device)
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
        _BLOCKS.pop(getattr(self, "handle", None), None)
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


# ---- packages ----


def _read_plan(package: str) -> dict:
    path = os.path.join(os.fspath(package), "plan.json")
    try:
        with open(path) as f:
            plan = json.load(f)
    except OSError as e:
        raise ValueError(f"package {package}: cannot read plan.json ({e.strerror})") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    if not isinstance(plan, dict) or plan.get("format") != "rowfuse-package":
        raise ValueError(f"{path}: not a rowfuse package's plan")
    return plan


def chain_weights(package: str, ch: dict):
    """(wh fp16, wf fp32) of a chain package, from weights.bin at plan.json's offsets."""
    path = os.path.join(package, "weights.bin")
    raw = np.fromfile(path, dtype=np.uint8)
    out = []
    for key, dtype in (("wh", np.float16), ("wf", np.float32)):
        off, n = int(ch[f"{key}_offset"]), int(ch[f"{key}_elems"])
        end = off + n * np.dtype(dtype).itemsize
        if off < 0 or n < 0 or end > raw.size:
            raise ValueError(
                f"{path}: {key} ({n} elements at byte {off}) lies outside the file's "
                f"{raw.size} bytes"
            )
        out.append(raw[off:end].view(dtype).copy())
    return out[0], out[1]


def folded(a: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """a * scale (float64 holding fp32 values) as the compiler folds a constant scale into a
    linear (src/chain/match.c, absorb_scale): each product exact in double, rounded to fp32
    once."""
    return (a * scale).astype(np.float32)


def linear_candidates(module) -> list[list[tuple]]:
    """Per nn.Linear of `module`, the (W^T in fp16, bias in fp32 or None) a chain stage may
    hold for it: as it is, and with a constant per-feature scale folded in (LayerScale: the
    compiler folds a 1-D parameter of out_features values that multiplies the output into
    W and b, each product rounded to fp32 once, W then to fp16)."""
    vectors = [p.detach().cpu().double().numpy() for p in module.parameters() if p.dim() == 1]
    out = []
    for m in module.modules():
        if not isinstance(m, nn.Linear):
            continue
        w = m.weight.detach().cpu().double().numpy().T
        b = None if m.bias is None else m.bias.detach().cpu().double().numpy()
        cands = [
            (w.astype(np.float32).astype(np.float16), None if b is None else b.astype(np.float32))
        ]
        for v in vectors:
            if v.shape == (w.shape[1],):
                cands.append(
                    (
                        folded(w, v).astype(np.float16),
                        None if b is None else folded(b, v),
                    )
                )
        out.append(cands)
    return out


def _check_chain_weights(module, package: str, ch: dict) -> None:
    """Raises ValueError unless every linear stage's (W, b) of the package is the fp16 W^T
    and fp32 bias of one of the module's nn.Linear layers, each layer used once."""
    wh, wf = chain_weights(package, ch)
    layers = linear_candidates(module)
    used = [False] * len(layers)

    def same(a, b) -> bool:
        return (a is None and b is None) or (
            a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b)
        )

    for i, s in enumerate(ch.get("stages", [])):
        if s.get("op") == "linear":
            mats = [("W", s["w"], s["b"])]
        elif s.get("op") == "gated":
            mats = [("Wg", s["wg"], s["bg"]), ("Wu", s["wu"], s["bu"])]
        else:
            continue
        k, n = int(s["k"]), int(s["n"])
        for name, woff, boff in mats:
            w = wh[woff : woff + k * n]
            w = w.reshape(k, n) if w.size == k * n else None
            b = None if boff < 0 else wf[boff : boff + n]
            hit = next(
                (
                    j
                    for j, cands in enumerate(layers)
                    if not used[j]
                    and w is not None
                    and any(same(lw, w) and same(lb, b) for lw, lb in cands)
                ),
                None,
            )
            if hit is None:
                raise ValueError(
                    f"package {package} was compiled from other weights: stage {i}'s {name} "
                    f"({k} x {n}) is none of the module's nn.Linear layers; recompile it from "
                    "this module (compile_block without package=)"
                )
            used[hit] = True
    if not all(used):
        raise ValueError(
            f"package {package} was compiled from another model: {used.count(False)} of the "
            f"module's {len(layers)} nn.Linear layers are in none of its stages"
        )


def _compile(module, rows: int, example, workdir: str) -> tuple[str, str]:
    """Exports `module` and runs `rowfuse compile` on it: (model path, package dir)."""
    from rowfuse.export import export

    model = os.path.join(workdir, "block.onnx")
    try:
        export(copy.deepcopy(module).cpu(), example, rows, model)
    except SystemExit as e:  # the exporter's own refusals
        raise UnsupportedBlock(str(e)) from None
    except Exception as e:  # torch.export / the ONNX exporter could not take the module
        raise UnsupportedBlock(f"torch.export could not export the module: {e}") from e
    pkg = os.path.join(workdir, "pkg")
    env = dict(os.environ)
    # the generator the CLI runs is this interpreter's rowfuse.kernels
    env.setdefault("RF_PYTHON", sys.executable)
    here = os.path.dirname(locate.PACKAGE_DIR)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    cmd = [locate.cli(), "compile", model, "--rows", str(rows), "-o", pkg]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise UnsupportedBlock("\n".join(msg[-20:]) or f"rowfuse compile exited {p.returncode}")
    return model, pkg


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
    """The residual MLP's weights in the kernels' layout and precision, as numpy arrays:
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


def _mlp_block(module, rows, package, schedule, weights, tmp=None) -> RowfuseBlock:
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
    return RowfuseBlock(*t, rows=rows, schedule=schedule, package=package, weights=weights, tmp=tmp)


def compile_block(
    module,
    rows: int,
    package=None,
    schedule: str = "auto",
    weights: str = "package",
    example=None,
    device=None,
):
    """A module computing `module` with rowfuse's kernels (see the module docstring).

    package=None exports the module with `rows` rows ([rows, in_features] of its first
    nn.Linear, or `example`) and compiles it into a temporary package, removed with the
    block (block.package names it, block.model the ONNX file); a module rowfuse does not
    compile raises UnsupportedBlock with the compiler's message. package="pkg/" loads a
    package made ahead of time, checked against the module. schedule and weights="module"
    apply to the residual MLP only. device: the CUDA device (default: torch's current)."""
    if weights not in ("package", "module"):
        raise ValueError(f"weights must be 'package' or 'module', got {weights!r}")
    if not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be an integer >= 1, got {rows!r}")
    if package is not None and weights == "package" and not _is_chain(package):
        _two_linears(module)  # the residual MLP's shape errors before any file is read
    tmp = model = None
    if package is None:
        tmp = tempfile.mkdtemp(prefix="rowfuse-block-")
        try:
            model, package = _compile(module, rows, example, tmp)
        except BaseException:
            shutil.rmtree(tmp, True)
            raise
    try:
        if not _is_chain(package):
            return _mlp_block(module, rows, package, schedule, weights, tmp)
        if schedule not in ("auto", "chain"):
            raise ValueError(
                f"schedule {schedule!r}: a chain package has one schedule, its chain_mma kernel"
            )
        if weights != "package":
            raise ValueError(
                "weights='module' applies to the residual MLP; a chain package "
                "runs its own weights (recompile it from this module)"
            )
        plan = _read_plan(package)
        if model is None:
            _check_chain_weights(module, package, plan["chain"])
            recorded = plan.get("model") or None
            model = recorded if recorded and os.path.isabs(recorded) else None
        return ChainBlock(package, model, rows, device=device, tmp=tmp)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, True)
        raise


def _is_chain(package) -> bool:
    path = os.path.join(os.fspath(package), "plan.json")
    if not os.path.exists(path):
        return False  # the residual MLP's loader says what is missing
    return "chain" in _read_plan(package)
