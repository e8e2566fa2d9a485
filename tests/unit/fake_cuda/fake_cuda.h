/* A test-only stand-in for the CUDA runtime, the cuBLASLt entry points and the glue
 * kernels (src/runtime/glue.h) that the rowfuse runtime calls, for fault injection on a
 * machine without a GPU (test_runtime_faults.c). Host memory stands in for device memory
 * (so AddressSanitizer sees every byte the runtime copies), kernel launches are no-ops,
 * and a launch on a capturing stream becomes a node of the captured graph.
 *
 * Injection: every call that can fail counts as one injection point; after
 * fake_cuda_reset(n), call number n (1-based) fails with a realistic error for that call
 * (cudaErrorMemoryAllocation for cudaMalloc, cudaErrorLaunchOutOfResources for a launch,
 * CUBLAS_STATUS_ALLOC_FAILED for a descriptor, ...). n = 0 fails nothing. Releases
 * (cudaFree of a pointer, *Destroy) never fail: a failed release has no meaning to check.
 *
 * Bookkeeping: every device buffer, stream, event, graph, graph exec and cuBLASLt object
 * is tracked until released; fake_cuda_outstanding() counts what is still live (kernel
 * libraries excepted: packages keep theirs loaded by design). Misuse (a release of an
 * unknown object, a copy outside a live buffer, a matmul operand smaller than its layout,
 * a stream that does not exist) is counted and its first description kept. */
#ifndef RF_FAKE_CUDA_H
#define RF_FAKE_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts a run: the call counter to 0, call number fail_at to fail (0: none). Forgets
 * the previous run's injection and misuse records, not its live objects. */
void fake_cuda_reset(long fail_at);
/* Injection points passed since the last reset. */
long fake_cuda_calls(void);
/* The entry point that was made to fail and its error's name, or NULL if none was. */
const char *fake_cuda_injected_call(void);
const char *fake_cuda_injected_error(void);
/* Live tracked objects (kernel libraries excepted); `what` gets a short description. */
int fake_cuda_outstanding(char *what, size_t size);
/* Stops tracking every live object but the kernel libraries (a failed run's leftovers, so
 * the next run is judged alone); their memory is not freed. */
void fake_cuda_forget(void);
/* Misuses seen since the last reset; `what` gets the first one's description. */
int fake_cuda_misuse(char *what, size_t size);
/* Kernel libraries loaded (cudaLibraryLoadData) since the process began, and the index of
 * the last such call in the current run (0 if none). */
int fake_cuda_libraries(void);
long fake_cuda_last_library_call(void);

/* Streams other than the capturing one: the next n kernel launches on a capturing stream
 * run at once instead of becoming nodes, as if the launcher had sent them to another
 * stream (reset by fake_cuda_reset). The legacy default stream (NULL or cudaStreamLegacy)
 * and cudaStreamPerThread are modelled: work on the legacy stream while a blocking stream
 * captures is refused with cudaErrorStreamCaptureImplicit and invalidates that capture. */
void fake_cuda_divert(int n);
/* Kernel launches that ran at once (not captured) since the last reset. */
long fake_cuda_eager_kernels(void);
/* The enqueues that went ahead since the last reset, space-separated, each a call name
 * with "[graph]" appended when it became a node of a capture. */
const char *fake_cuda_trace(void);

/* Internal to the fake (fake_cuda.c, fake_cublaslt.c). */
int fake_cuda_inject(const char *call, const char *error_name);
void fake_cuda_bad(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* 1 if [p, p + bytes) lies inside one live device buffer; counts a misuse otherwise. */
int fake_cuda_range(const void *p, size_t bytes, const char *call, const char *what);
void fake_cuda_track(int kind, const void *p);
int fake_cuda_untrack(int kind, const void *p, const char *call);
int fake_cuda_live(int kind, const void *p);
/* The bookkeeping every fake handle shares: fake_cuda_new makes a zeroed object of `size`
 * bytes tracked as `kind` (NULL when out of memory); fake_cuda_delete untracks and frees one
 * (0, and a misuse, when it is not live); fake_cuda_check says whether one is live, counting
 * a misuse "<call>: <kind> <p> does not exist" when it is not. */
void *fake_cuda_new(int kind, size_t size);
int fake_cuda_delete(int kind, void *p, const char *call);
int fake_cuda_check(int kind, const void *p, const char *call);
/* An enqueue of `call` on `stream` (NULL: the legacy stream): FAKE_GO to go ahead, with
 * *captured set when it became a node (of type node_type) of a capture in progress and
 * must not run now; FAKE_INJECTED when this call is the one to fail (a capture in progress
 * is invalidated, as a failed launch does); FAKE_IMPLICIT for the legacy stream while a
 * blocking stream captures (that capture is invalidated); FAKE_REFUSED for an unknown
 * stream or a capture already invalidated. */
enum { FAKE_GO = 0, FAKE_INJECTED, FAKE_REFUSED, FAKE_IMPLICIT };
int fake_cuda_enqueue(void *stream, int node_type, const char *call, const char *error_name,
                      int *captured);
enum {
    FAKE_STREAM = 1,
    FAKE_EVENT,
    FAKE_GRAPH,
    FAKE_EXEC,
    FAKE_LIBRARY,
    FAKE_LT_HANDLE,
    FAKE_LT_DESC,
    FAKE_LT_LAYOUT,
    FAKE_LT_PREF,
    FAKE_KINDS
};

#ifdef __cplusplus
}
#endif
#endif
