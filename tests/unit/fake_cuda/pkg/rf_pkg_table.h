/* A kernel table for the real shim (src/pkg/rf_pkg_shim.c) whose stand-in kernels make
 * the calls an exported CuTe DSL kernel makes, into the fake CUDA runtime (fake_cuda.h):
 * each module loads its code with cudaLibraryLoadData (reported through
 * CUTE_DSL_CUDA_ERROR_CHECK, as export_to_c's loaders do) and each launch is one
 * cudaLaunchKernel on the caller's stream. For test_runtime_faults.c; the names and shape
 * are those of the 49x48x96 plan's kernels, as in tests/unit/fake_pkg. */
#include <cuda_runtime.h>
#include <stdint.h>

#define RF_PKG_CHANNELS 48
#define RF_PKG_HIDDEN 96

/* clang-format off */
#define RF_FAKE_TENSOR(p, t) typedef struct { void *data; int32_t dynamic_shapes[1]; } p##_Tensor_##t##_t;
#define RF_FAKE_PARAM(p, t) typedef struct { void *data; } p##_Tensor_##t##_t;
#define RF_FAKE_KERNEL(p)                                                                         \
    typedef struct { cudaLibrary_t lib; } p##_Kernel_Module_t;                                    \
    static inline void p##_Kernel_Module_Load(p##_Kernel_Module_t *m) {                           \
        CUTE_DSL_CUDA_ERROR_CHECK(cudaLibraryLoadData(&m->lib, #p, NULL, NULL, 0, NULL, NULL, 0)); \
    }                                                                                             \
    RF_FAKE_TENSOR(p, mX) RF_FAKE_PARAM(p, mW1) RF_FAKE_PARAM(p, mB1) RF_FAKE_PARAM(p, mW2)       \
    RF_FAKE_PARAM(p, mB2) RF_FAKE_TENSOR(p, mH) RF_FAKE_TENSOR(p, mY)                             \
    static inline int32_t cute_dsl_##p##_wrapper(                                                 \
        p##_Kernel_Module_t *m, p##_Tensor_mX_t *x, p##_Tensor_mW1_t *w1, p##_Tensor_mB1_t *b1,   \
        p##_Tensor_mW2_t *w2, p##_Tensor_mB2_t *b2, p##_Tensor_mH_t *h, p##_Tensor_mY_t *y,       \
        int32_t rows, int32_t grid, cudaStream_t s) {                                             \
        void *args[] = {x->data, w1->data, b1->data, w2->data, b2->data, h->data, y->data, &rows}; \
        dim3 g = {(unsigned)grid, 1, 1}, b = {128, 1, 1};                                         \
        if (x->dynamic_shapes[0] != rows)                                                         \
            return (int32_t)cudaErrorInvalidValue;                                                \
        return (int32_t)cudaLaunchKernel((const void *)m->lib, g, b, args, 0, s);                 \
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
