"""ctypes mirrors of the C structs Python passes across the boundary, in one place.

Each class names its header. tests/python/test_cabi.py compares every field's offset and
every struct's size with what the C compiler says (the rf_abi_layout program), so a change
to a header that is not made here fails the tests.
"""

from __future__ import annotations

import ctypes

c_int, c_i64, c_u64, c_dbl, c_ptr = (
    ctypes.c_int,
    ctypes.c_int64,
    ctypes.c_uint64,
    ctypes.c_double,
    ctypes.c_void_p,
)


class Allocator(ctypes.Structure):  # rf_allocator_t, rowfuse/alloc.h
    _fields_ = [("alloc", c_ptr), ("realloc", c_ptr), ("free", c_ptr), ("ctx", c_ptr)]


class MlpArgs(ctypes.Structure):  # rf_mlp_args_t, rowfuse/kernel_abi.h
    _fields_ = [
        ("x", c_ptr),
        ("w1", c_ptr),
        ("b1", c_ptr),
        ("w2", c_ptr),
        ("b2", c_ptr),
        ("h", c_ptr),
        ("y", c_ptr),
        ("rows", c_i64),
    ]


class ChainArgs(ctypes.Structure):  # rf_chain_args_t, rowfuse/kernel_abi.h
    _fields_ = [
        ("x", c_ptr),
        ("wh", c_ptr),
        ("wf", c_ptr),
        ("y", c_ptr),
        ("rows", c_i64),
        ("scratch", c_ptr),
        ("scratch_bytes", c_i64),
    ]


class DeviceInfo(ctypes.Structure):  # rf_device_info_t, rowfuse/runtime.h
    _fields_ = [
        ("ordinal", c_int),
        ("name", ctypes.c_char * 128),
        ("cc_major", c_int),
        ("cc_minor", c_int),
        ("sm_count", c_int),
        ("driver_version", c_int),
        ("runtime_version", c_int),
        ("total_mem", ctypes.c_size_t),
        ("clock_khz", c_int),
        ("mem_clock_khz", c_int),
    ]


class MlpCase(ctypes.Structure):  # rf_mlp_case_t, rowfuse/mlp.h
    _fields_ = [
        ("rows", c_i64),
        ("channels", c_i64),
        ("hidden", c_i64),
        ("seed", c_u64),
        ("x", c_ptr),
        ("w1", c_ptr),
        ("w2", c_ptr),
        ("b1", c_ptr),
        ("b2", c_ptr),
        ("ref", c_ptr),
        ("allow", c_ptr),
        ("step", c_dbl),
    ]


class Tolerance(ctypes.Structure):  # rf_mlp_tolerance_t, rowfuse/mlp.h
    _fields_ = [("step_fraction", c_dbl), ("allow_factor", c_dbl)]


class CompareResult(ctypes.Structure):  # rf_mlp_compare_result_t, rowfuse/mlp.h
    _fields_ = [
        ("passed", c_int),
        ("nonfinite", c_i64),
        ("out_of_tol", c_i64),
        ("max_abs", c_dbl),
        ("rel_l2", c_dbl),
        ("steps", c_dbl),
        ("max_ratio", c_dbl),
        ("worst_index", c_i64),
        ("worst_got", c_dbl),
        ("worst_ref", c_dbl),
    ]


class MlpWeights(ctypes.Structure):  # rf_mlp_weights_t, rowfuse/compile.h
    _fields_ = [
        ("channels", c_i64),
        ("hidden", c_i64),
        ("w1", c_ptr),
        ("w2", c_ptr),
        ("b1", c_ptr),
        ("b2", c_ptr),
    ]


class BenchSummary(ctypes.Structure):  # rf_bench_summary_t, src/base/stats.h
    _fields_ = [
        ("count", ctypes.c_size_t),
        ("median", c_dbl),
        ("p10", c_dbl),
        ("p90", c_dbl),
        ("mean", c_dbl),
        ("min", c_dbl),
        ("max", c_dbl),
        ("median_lo", c_dbl),
        ("median_hi", c_dbl),
    ]


RF_MAX_RANK = 8  # rowfuse/types.h (the layout test checks the struct it sizes)
RF_DTYPE_F32 = 1  # rf_dtype_t values (checked by the layout test too)
RF_DTYPE_F64 = 4
RF_PRECISION_FP64 = 0  # rf_precision_t, rowfuse/ref.h
RF_PRECISION_MIXED = 1


class Shape(ctypes.Structure):  # rf_shape_t, rowfuse/types.h
    _fields_ = [("rank", c_int), ("dims", c_i64 * RF_MAX_RANK)]


class Tensor(ctypes.Structure):  # rf_tensor_t, rowfuse/tensor.h
    _fields_ = [("dtype", c_int), ("shape", Shape), ("data", c_ptr), ("nbytes", ctypes.c_size_t)]


# C struct name -> ctypes class, for the layout test
STRUCTS = {
    "rf_allocator_t": Allocator,
    "rf_mlp_args_t": MlpArgs,
    "rf_chain_args_t": ChainArgs,
    "rf_device_info_t": DeviceInfo,
    "rf_mlp_case_t": MlpCase,
    "rf_mlp_tolerance_t": Tolerance,
    "rf_mlp_compare_result_t": CompareResult,
    "rf_mlp_weights_t": MlpWeights,
    "rf_shape_t": Shape,
    "rf_tensor_t": Tensor,
    "rf_bench_summary_t": BenchSummary,
}
# C constant name -> Python value, for the layout test
CONSTANTS = {
    "RF_MAX_RANK": RF_MAX_RANK,
    "RF_DTYPE_F32": RF_DTYPE_F32,
    "RF_DTYPE_F64": RF_DTYPE_F64,
    "RF_PRECISION_FP64": RF_PRECISION_FP64,
    "RF_PRECISION_MIXED": RF_PRECISION_MIXED,
}
