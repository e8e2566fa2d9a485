/* A kernel table for the real shim (src/pkg/rf_pkg_shim.c) over stand-in kernels without
 * GPU code: the same declarations export_to_c writes (module type and loader, tensor
 * structs, wrapper), so the shim is compiled and its exports tested on a machine without
 * a GPU (tests/unit/test_runtime_nogpu.c). The names are those rowfuse compile gives the
 * 49x48x96 plan's kernels. */
#include <cuda_runtime.h>
#include <stdint.h>

#define RF_PKG_CHANNELS 48
#define RF_PKG_HIDDEN 96

/* clang-format off */
#define RF_FAKE_TENSOR(p, t) typedef struct { void *data; int32_t dynamic_shapes[1]; } p##_Tensor_##t##_t;
#define RF_FAKE_PARAM(p, t) typedef struct { void *data; } p##_Tensor_##t##_t;
#define RF_FAKE_KERNEL(p)                                                                         \
    typedef struct { int loaded; } p##_Kernel_Module_t;                                           \
    static inline void p##_Kernel_Module_Load(p##_Kernel_Module_t *m) { m->loaded = 1; }          \
    RF_FAKE_TENSOR(p, mX) RF_FAKE_PARAM(p, mW1) RF_FAKE_PARAM(p, mB1) RF_FAKE_PARAM(p, mW2)       \
    RF_FAKE_PARAM(p, mB2) RF_FAKE_TENSOR(p, mH) RF_FAKE_TENSOR(p, mY)                             \
    static inline int32_t cute_dsl_##p##_wrapper(                                                 \
        p##_Kernel_Module_t *m, p##_Tensor_mX_t *x, p##_Tensor_mW1_t *w1, p##_Tensor_mB1_t *b1,   \
        p##_Tensor_mW2_t *w2, p##_Tensor_mB2_t *b2, p##_Tensor_mH_t *h, p##_Tensor_mY_t *y,       \
        int32_t rows, int32_t grid, cudaStream_t s) {                                             \
        (void)w1, (void)b1, (void)w2, (void)b2, (void)h, (void)y, (void)grid, (void)s;            \
        return m->loaded && x->dynamic_shapes[0] == rows ? 0 : (int32_t)cudaErrorInvalidValue;    \
    }
/* clang-format on */

RF_FAKE_KERNEL(rf_c48_h96_fused_smem_t16)
RF_FAKE_KERNEL(rf_c48_h96_fused_gmem_t16)
RF_FAKE_KERNEL(rf_c48_h96_proj1_t16)
RF_FAKE_KERNEL(rf_c48_h96_proj2_t16)
RF_FAKE_KERNEL(rf_c48_h96_fused_wgmma_t64_pair)

#define RF_PKG_KERNELS(X)                                                                          \
    X(rf_c48_h96_fused_smem_t16)                                                                   \
    X(rf_c48_h96_fused_gmem_t16)                                                                   \
    X(rf_c48_h96_proj1_t16) X(rf_c48_h96_proj2_t16) X(rf_c48_h96_fused_wgmma_t64_pair)
