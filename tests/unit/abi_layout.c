/* Prints, as JSON, the size of every C struct Python mirrors with ctypes
 * (python/rowfuse/capi/cabi.py) and the offset of each field, as this compiler lays them out;
 * tests/python/test_cabi.py compares the two. Not a ctest: a tool the test runs. */
#include <stddef.h>
#include <stdio.h>

#include "base/stats.h"
#include "rowfuse/alloc.h"
#include "rowfuse/compile.h"
#include "rowfuse/kernel_abi.h"
#include "rowfuse/mlp.h"
#include "rowfuse/runtime.h"

#define F(T, f) printf("%s\"%s\": %zu", first++ ? ", " : "", #f, offsetof(T, f))
#define BEGIN(T)                                                                                   \
    printf("%s\"" #T "\": {\"size\": %zu, \"fields\": {", nstruct++ ? ",\n" : "", sizeof(T)),      \
        first = 0
#define END() printf("}}")

int main(void) {
    int first = 0, nstruct = 0;
    printf("{\n");
    BEGIN(rf_allocator_t);
    F(rf_allocator_t, alloc), F(rf_allocator_t, realloc), F(rf_allocator_t, free);
    F(rf_allocator_t, ctx);
    END();
    BEGIN(rf_mlp_args_t);
    F(rf_mlp_args_t, x), F(rf_mlp_args_t, w1), F(rf_mlp_args_t, b1), F(rf_mlp_args_t, w2);
    F(rf_mlp_args_t, b2), F(rf_mlp_args_t, h), F(rf_mlp_args_t, y), F(rf_mlp_args_t, rows);
    END();
    BEGIN(rf_chain_args_t);
    F(rf_chain_args_t, x), F(rf_chain_args_t, wh), F(rf_chain_args_t, wf), F(rf_chain_args_t, y);
    F(rf_chain_args_t, rows), F(rf_chain_args_t, scratch), F(rf_chain_args_t, scratch_bytes);
    END();
    BEGIN(rf_device_info_t);
    F(rf_device_info_t, ordinal), F(rf_device_info_t, name), F(rf_device_info_t, cc_major);
    F(rf_device_info_t, cc_minor), F(rf_device_info_t, sm_count);
    F(rf_device_info_t, driver_version), F(rf_device_info_t, runtime_version);
    F(rf_device_info_t, total_mem), F(rf_device_info_t, clock_khz);
    F(rf_device_info_t, mem_clock_khz);
    END();
    BEGIN(rf_mlp_case_t);
    F(rf_mlp_case_t, rows), F(rf_mlp_case_t, channels), F(rf_mlp_case_t, hidden);
    F(rf_mlp_case_t, seed), F(rf_mlp_case_t, x), F(rf_mlp_case_t, w1), F(rf_mlp_case_t, w2);
    F(rf_mlp_case_t, b1), F(rf_mlp_case_t, b2), F(rf_mlp_case_t, ref), F(rf_mlp_case_t, allow);
    F(rf_mlp_case_t, step);
    END();
    BEGIN(rf_mlp_tolerance_t);
    F(rf_mlp_tolerance_t, step_fraction), F(rf_mlp_tolerance_t, allow_factor);
    END();
    BEGIN(rf_mlp_compare_result_t);
    F(rf_mlp_compare_result_t, passed), F(rf_mlp_compare_result_t, nonfinite);
    F(rf_mlp_compare_result_t, out_of_tol), F(rf_mlp_compare_result_t, max_abs);
    F(rf_mlp_compare_result_t, rel_l2), F(rf_mlp_compare_result_t, steps);
    F(rf_mlp_compare_result_t, max_ratio), F(rf_mlp_compare_result_t, worst_index);
    F(rf_mlp_compare_result_t, worst_got), F(rf_mlp_compare_result_t, worst_ref);
    END();
    BEGIN(rf_mlp_weights_t);
    F(rf_mlp_weights_t, channels), F(rf_mlp_weights_t, hidden), F(rf_mlp_weights_t, w1);
    F(rf_mlp_weights_t, w2), F(rf_mlp_weights_t, b1), F(rf_mlp_weights_t, b2);
    END();
    BEGIN(rf_shape_t);
    F(rf_shape_t, rank), F(rf_shape_t, dims);
    END();
    BEGIN(rf_tensor_t);
    F(rf_tensor_t, dtype), F(rf_tensor_t, shape), F(rf_tensor_t, data), F(rf_tensor_t, nbytes);
    END();
    BEGIN(rf_bench_summary_t);
    F(rf_bench_summary_t, count), F(rf_bench_summary_t, median), F(rf_bench_summary_t, p10);
    F(rf_bench_summary_t, p90), F(rf_bench_summary_t, mean), F(rf_bench_summary_t, min);
    F(rf_bench_summary_t, max), F(rf_bench_summary_t, median_lo);
    F(rf_bench_summary_t, median_hi);
    END();
    printf(",\n\"constants\": {\"RF_MAX_RANK\": %d, \"RF_DTYPE_F32\": %d, \"RF_DTYPE_F64\": %d, "
           "\"RF_PRECISION_FP64\": %d, \"RF_PRECISION_MIXED\": %d}",
           RF_MAX_RANK, (int)RF_DTYPE_F32, (int)RF_DTYPE_F64, (int)RF_PRECISION_FP64,
           (int)RF_PRECISION_MIXED);
    printf("\n}\n");
    return 0;
}
