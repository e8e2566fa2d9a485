/* The C shim of every rowfuse kernel package (rowfuse/kernel_abi.h).
 *
 * Compiled into each package's librowfuse_pkg.so together with the kernels that the CuTe
 * DSL exported (export_to_c). The package supplies one generated table, rf_pkg_table.h:
 *   RF_PKG_CHANNELS, RF_PKG_HIDDEN   the shape the kernels were specialised for
 *   #include "kernels/<name>.h"       each kernel's export_to_c header
 *   RF_PKG_KERNELS(X)                 X(name) per kernel, in plan.json's order
 * and nothing else: the schedules, launch order and grid are the runtime's to apply from
 * plan.json. Never prints; errors are returned as CUDA error numbers.
 * A package with chain kernels (mode chain_mma) lists them in RF_PKG_CHAIN_KERNELS(X)
 * instead, and every kernel, in plan.json's order, in RF_PKG_KERNEL_LIST(X, C) (X for an
 * MLP kernel, C for a chain kernel); a table without these has MLP kernels only. Chain kernels
 * of mode chain_stream are listed in RF_PKG_STREAM_KERNELS(X) (not RF_PKG_CHAIN_KERNELS):
 * their launcher also passes the scratch buffer. The kernels of a chain's conventional schedule
 * (chain_mma with a "segment") are listed in RF_PKG_SEG_KERNELS(X): their launcher passes the
 * scratch as the values between them, [rows, aux_row] fp16 (the runtime sizes it).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The exported headers report load errors through this macro, passing the call itself
 * (CUTE_DSL_CUDA_ERROR_CHECK(cuModuleLoadData(...))): it is evaluated once, and the first
 * error is kept. */
static int rf_pkg_first_error;
#define CUTE_DSL_CUDA_ERROR_CHECK(call)                                                            \
    do {                                                                                           \
        int rf_pkg_err_ = (int)(call);                                                             \
        if (rf_pkg_err_ != 0 && rf_pkg_first_error == 0)                                           \
            rf_pkg_first_error = rf_pkg_err_;                                                      \
    } while (0)

#include "rf_pkg_table.h"
#include "rowfuse/kernel_abi.h"

#ifndef RF_PKG_CHAIN_KERNELS
#define RF_PKG_CHAIN_KERNELS(X)
#endif
#ifndef RF_PKG_SEG_KERNELS
#define RF_PKG_SEG_KERNELS(X)
#endif
#ifndef RF_PKG_STREAM_KERNELS
#define RF_PKG_STREAM_KERNELS(X)
#endif
#ifndef RF_PKG_KERNEL_LIST
#define RF_PKG_KERNEL_LIST(X, C) RF_PKG_KERNELS(X)
#endif

#define RF_PKG_EXPORT __attribute__((visibility("default")))

/* Planted faults, for tests of the checks only (`rowfuse compile --plant-fault
 * wrong-stream-*`: the generator then defines RF_PKG_FAULT_STREAM_* in rf_pkg_table.h; a
 * real package defines none). Every launch goes to a stream other than the caller's, as a
 * launcher with that bug would: the legacy default stream, a stream the shim made, or the
 * per-thread default stream. A capture on the caller's stream then records no kernel while
 * the kernel runs once, eagerly (or, where CUDA forbids the launch, the capture fails). */
#if defined(RF_PKG_FAULT_STREAM_LEGACY) || defined(RF_PKG_FAULT_STREAM_CREATED) ||                 \
    defined(RF_PKG_FAULT_STREAM_THREAD)
#include <cuda_runtime_api.h>
static cudaStream_t rf_pkg_fault_stream;
static int rf_pkg_fault_init(void) {
#if defined(RF_PKG_FAULT_STREAM_LEGACY)
    rf_pkg_fault_stream = cudaStreamLegacy;
#elif defined(RF_PKG_FAULT_STREAM_THREAD)
    rf_pkg_fault_stream = cudaStreamPerThread;
#else
    if (!rf_pkg_fault_stream)
        return (int)cudaStreamCreateWithFlags(&rf_pkg_fault_stream, cudaStreamDefault);
#endif
    return 0;
}
#define RF_PKG_STREAM(st) ((void)(st), rf_pkg_fault_stream)
#else
static int rf_pkg_fault_init(void) {
    return 0;
}
#define RF_PKG_STREAM(st) (st)
#endif

static int rf_pkg_aligned(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

typedef int (*rf_pkg_launcher_t)(const rf_mlp_args_t *a, int32_t rows, int32_t grid,
                                 cudaStream_t stream);
typedef int (*rf_pkg_chain_launcher_t)(const rf_chain_args_t *a, int32_t rows, int32_t grid,
                                       cudaStream_t stream);

#define RF_PKG_MODULE(p) static p##_Kernel_Module_t p##_mod;
RF_PKG_KERNELS(RF_PKG_MODULE)
RF_PKG_CHAIN_KERNELS(RF_PKG_MODULE)
RF_PKG_STREAM_KERNELS(RF_PKG_MODULE)
RF_PKG_SEG_KERNELS(RF_PKG_MODULE)

/* One launcher per kernel: wraps the device pointers in the exported tensor structs (rows
 * is the one dynamic extent) and calls the exported wrapper. */
#define RF_PKG_LAUNCHER(p)                                                                         \
    static int p##_launch(const rf_mlp_args_t *a, int32_t rows, int32_t grid, cudaStream_t st) {   \
        p##_Tensor_mX_t x = {(void *)a->x, {rows}};                                                \
        p##_Tensor_mW1_t w1 = {(void *)a->w1};                                                     \
        p##_Tensor_mB1_t b1 = {(void *)a->b1};                                                     \
        p##_Tensor_mW2_t w2 = {(void *)a->w2};                                                     \
        p##_Tensor_mB2_t b2 = {(void *)a->b2};                                                     \
        p##_Tensor_mH_t h = {a->h, {rows}};                                                        \
        p##_Tensor_mY_t y = {(void *)a->y, {rows}};                                                \
        return (int)cute_dsl_##p##_wrapper(&p##_mod, &x, &w1, &b1, &w2, &b2, &h, &y, rows, grid,   \
                                           RF_PKG_STREAM(st));                                     \
    }
RF_PKG_KERNELS(RF_PKG_LAUNCHER)

/* A chain kernel's launcher: x [rows, C] and y [rows, N_out] (rows dynamic), the weight
 * arrays wh and wf whole. */
#define RF_PKG_CHAIN_LAUNCHER(p)                                                                   \
    static int p##_launch_chain(const rf_chain_args_t *a, int32_t rows, int32_t grid,              \
                                cudaStream_t st) {                                                 \
        p##_Tensor_mX_t x = {(void *)a->x, {rows}};                                                \
        p##_Tensor_mWh_t wh = {(void *)a->wh};                                                     \
        p##_Tensor_mWf_t wf = {(void *)a->wf};                                                     \
        p##_Tensor_mY_t y = {(void *)a->y, {rows}};                                                \
        return (int)cute_dsl_##p##_wrapper(&p##_mod, &x, &wh, &wf, &y, rows, grid,                 \
                                           RF_PKG_STREAM(st));                                     \
    }
RF_PKG_CHAIN_KERNELS(RF_PKG_CHAIN_LAUNCHER)

/* A chain_stream kernel's launcher: the chain arguments and the scratch buffer (fp32 view,
 * its extent in elements); no scratch, or one not 16-byte aligned, is refused. */
#define RF_PKG_STREAM_LAUNCHER(p)                                                                  \
    static int p##_launch_chain(const rf_chain_args_t *a, int32_t rows, int32_t grid,              \
                                cudaStream_t st) {                                                 \
        if (!a->scratch || !rf_pkg_aligned(a->scratch) || a->scratch_bytes < 4 ||                  \
            a->scratch_bytes / 4 > INT32_MAX)                                                      \
            return (int)cudaErrorInvalidValue;                                                     \
        p##_Tensor_mX_t x = {(void *)a->x, {rows}};                                                \
        p##_Tensor_mWh_t wh = {(void *)a->wh};                                                     \
        p##_Tensor_mWf_t wf = {(void *)a->wf};                                                     \
        p##_Tensor_mY_t y = {(void *)a->y, {rows}};                                                \
        p##_Tensor_mS_t s = {a->scratch, {(int32_t)(a->scratch_bytes / 4)}};                       \
        return (int)cute_dsl_##p##_wrapper(&p##_mod, &x, &wh, &wf, &y, &s, rows, grid,             \
                                           RF_PKG_STREAM(st));                                     \
    }
RF_PKG_STREAM_KERNELS(RF_PKG_STREAM_LAUNCHER)

/* A conventional schedule's kernel: the chain arguments and the scratch as [rows, aux_row]
 * fp16 (rows dynamic); no scratch, or one not 16-byte aligned, is refused. */
#define RF_PKG_SEG_LAUNCHER(p)                                                                     \
    static int p##_launch_chain(const rf_chain_args_t *a, int32_t rows, int32_t grid,              \
                                cudaStream_t st) {                                                 \
        if (!a->scratch || !rf_pkg_aligned(a->scratch) || a->scratch_bytes < 16)                   \
            return (int)cudaErrorInvalidValue;                                                     \
        p##_Tensor_mX_t x = {(void *)a->x, {rows}};                                                \
        p##_Tensor_mWh_t wh = {(void *)a->wh};                                                     \
        p##_Tensor_mWf_t wf = {(void *)a->wf};                                                     \
        p##_Tensor_mY_t y = {(void *)a->y, {rows}};                                                \
        p##_Tensor_mA_t s = {a->scratch, {rows}};                                                  \
        return (int)cute_dsl_##p##_wrapper(&p##_mod, &x, &wh, &wf, &y, &s, rows, grid,             \
                                           RF_PKG_STREAM(st));                                     \
    }
RF_PKG_SEG_KERNELS(RF_PKG_SEG_LAUNCHER)

#define RF_PKG_ENTRY(p) {#p, p##_launch, NULL},
#define RF_PKG_CHAIN_ENTRY(p) {#p, NULL, p##_launch_chain},
static const struct {
    const char *name;
    rf_pkg_launcher_t launch;             /* MLP kernels */
    rf_pkg_chain_launcher_t launch_chain; /* chain kernels */
} rf_pkg_entries[] = {RF_PKG_KERNEL_LIST(RF_PKG_ENTRY, RF_PKG_CHAIN_ENTRY)};
enum { RF_PKG_N = (int)(sizeof rf_pkg_entries / sizeof rf_pkg_entries[0]) };

static int rf_pkg_ready;

RF_PKG_EXPORT int rf_pkg_abi_version(void);
RF_PKG_EXPORT int rf_pkg_channels(void);
RF_PKG_EXPORT int rf_pkg_hidden(void);
RF_PKG_EXPORT int rf_pkg_kernel_count(void);
RF_PKG_EXPORT const char *rf_pkg_kernel_name(int index);
RF_PKG_EXPORT int rf_pkg_init(void);
RF_PKG_EXPORT int rf_pkg_launch(int index, const rf_mlp_args_t *a, int32_t grid, void *stream);
RF_PKG_EXPORT int rf_pkg_launch_chain(int index, const rf_chain_args_t *a, int32_t grid,
                                      void *stream);

int rf_pkg_abi_version(void) {
    return RF_KERNEL_ABI_VERSION;
}
int rf_pkg_channels(void) {
    return RF_PKG_CHANNELS;
}
int rf_pkg_hidden(void) {
    return RF_PKG_HIDDEN;
}
int rf_pkg_kernel_count(void) {
    return RF_PKG_N;
}
const char *rf_pkg_kernel_name(int index) {
    return index >= 0 && index < RF_PKG_N ? rf_pkg_entries[index].name : NULL;
}

int rf_pkg_init(void) {
    if (rf_pkg_ready)
        return 0;
    rf_pkg_first_error = 0;
#define RF_PKG_LOAD(p) p##_Kernel_Module_Load(&p##_mod);
    RF_PKG_KERNELS(RF_PKG_LOAD)
    RF_PKG_CHAIN_KERNELS(RF_PKG_LOAD)
    RF_PKG_STREAM_KERNELS(RF_PKG_LOAD)
    RF_PKG_SEG_KERNELS(RF_PKG_LOAD)
#undef RF_PKG_LOAD
    if (rf_pkg_first_error != 0)
        return rf_pkg_first_error;
    if ((rf_pkg_first_error = rf_pkg_fault_init()) != 0)
        return rf_pkg_first_error;
    rf_pkg_ready = 1;
    return 0;
}

int rf_pkg_launch(int index, const rf_mlp_args_t *a, int32_t grid, void *stream) {
    const int64_t widest = RF_PKG_CHANNELS > RF_PKG_HIDDEN ? RF_PKG_CHANNELS : RF_PKG_HIDDEN;
    if (!rf_pkg_ready)
        return (int)cudaErrorNotReady;
    if (index < 0 || index >= RF_PKG_N || a == NULL || grid < 1 || !rf_pkg_entries[index].launch)
        return (int)cudaErrorInvalidValue;
    if (a->rows < 0 || a->rows * widest > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    if (!a->x || !a->w1 || !a->b1 || !a->w2 || !a->b2 || !a->y)
        return (int)cudaErrorInvalidValue;
    if (!rf_pkg_aligned(a->x) || !rf_pkg_aligned(a->w1) || !rf_pkg_aligned(a->b1) ||
        !rf_pkg_aligned(a->w2) || !rf_pkg_aligned(a->b2) || !rf_pkg_aligned(a->y) ||
        !rf_pkg_aligned(a->h))
        return (int)cudaErrorInvalidValue;
    return rf_pkg_entries[index].launch(a, (int32_t)a->rows, grid, (cudaStream_t)stream);
}

int rf_pkg_launch_chain(int index, const rf_chain_args_t *a, int32_t grid, void *stream) {
    const int64_t widest = RF_PKG_CHANNELS > RF_PKG_HIDDEN ? RF_PKG_CHANNELS : RF_PKG_HIDDEN;
    if (!rf_pkg_ready)
        return (int)cudaErrorNotReady;
    if (index < 0 || index >= RF_PKG_N || a == NULL || grid < 1 ||
        !rf_pkg_entries[index].launch_chain)
        return (int)cudaErrorInvalidValue;
    if (a->rows < 0 || a->rows * widest > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    if (!a->x || !a->wh || !a->wf || !a->y || !rf_pkg_aligned(a->x) || !rf_pkg_aligned(a->wh) ||
        !rf_pkg_aligned(a->wf) || !rf_pkg_aligned(a->y))
        return (int)cudaErrorInvalidValue;
    return rf_pkg_entries[index].launch_chain(a, (int32_t)a->rows, grid, (cudaStream_t)stream);
}
