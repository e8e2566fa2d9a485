/* The chain IR: a row-owned block as a chain of row-local stages, between the verified graph
 * and the plan (internal header of src/chain, used by src/compile and src/harness).
 *
 * A chain maps X [rows, in_width] to Y [rows, out_width], each output row from its own input
 * row. Values are numbered in the order they are produced: value 0 is X, stage s produces one
 * new value (stage s's dst), and the last value is Y. Stage kinds:
 *   linear  dst = epilogue(src @ W + b)     W [k, n] row-major, b [n] or none; the epilogue is
 *           applied in order to the fp32 accumulator: act F, add (+ an earlier value of width
 *           n), mul (* an earlier value of width n)
 *   gated   dst = F(src @ Wg + bg) * (src @ Wu + bu)
 *   act     dst = F(src)
 *   add     dst = a + b
 *   norm    dst = LayerNorm(src; eps, gamma?, beta?), RMSNorm(src; eps, gamma?) or
 *           Softmax(src) over the features (RF_CHAIN_NORM_LIST)
 * and, only between matching and fusion (rf_chain_fuse folds it into a linear's epilogue or
 * a gated stage; a chain that keeps one is refused), mul dst = a * b.
 *
 * Precision is decided per value by rf_chain_assign_dtypes: X is fp16 (given); a value that
 * is the input of a linear or gated stage is stored fp16 (rounded to nearest even once, when
 * it is produced, after its epilogue); every other value is fp32, Y included. Accumulation,
 * biases, norm gains and statistics are fp32. The residual MLP is the chain
 * linear(+relu) -> fp16 value -> linear(+add X, +relu) -> fp32 Y.
 *
 * Weights are held as fp32 (what the model stores; a chain read from a package holds the
 * plan's fp16 weights, exactly representable). The plan stores W in fp16.
 *
 * Ownership: rf_chain_create returns a chain the caller frees with rf_chain_destroy; every
 * array reachable from it (stages, values, weights) lives in its arena. Getters lend.
 */
#ifndef ROWFUSE_CHAIN_H
#define ROWFUSE_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "rowfuse/alloc.h"
#include "rowfuse/graph.h"
#include "rowfuse/status.h"
#include "rowfuse/verify.h"

#define RF_CHAIN_MAX_EPILOGUE 4
/* Most stages a chain may have (a guard, far above the blocks of real models). */
#define RF_CHAIN_MAX_STAGES 256
/* Room for "node 12 'name' (Softmax)" in messages. */
#define RF_CHAIN_DESC_NODE 256

typedef enum rf_chain_op {
    RF_CHAIN_LINEAR = 0,
    RF_CHAIN_GATED,
    RF_CHAIN_ACT,
    RF_CHAIN_ADD,
    RF_CHAIN_NORM,
    RF_CHAIN_MUL, /* matcher-internal; never reaches a plan */
    RF_CHAIN_OP_COUNT_
} rf_chain_op_t;

typedef enum rf_chain_fn {
    RF_CHAIN_FN_RELU = 0,
    RF_CHAIN_FN_GELU_ERF,
    RF_CHAIN_FN_GELU_TANH,
    RF_CHAIN_FN_SILU,
    RF_CHAIN_FN_SIGMOID,
    RF_CHAIN_FN_TANH,
    RF_CHAIN_FN_IDENTITY,
    RF_CHAIN_FN_SOFTPLUS,   /* ln(1 + exp(x)) */
    RF_CHAIN_FN_EXP,        /* exp(x), tiny-cuda-nn's Exponential */
    RF_CHAIN_FN_SIN,        /* sin(x), tiny-cuda-nn's Sine (SIREN, after a folded scale) */
    RF_CHAIN_FN_LEAKY_RELU, /* x < 0 ? alpha x : x (alpha: the stage's or epilogue's) */
    RF_CHAIN_FN_ELU,        /* x < 0 ? alpha (exp(x) - 1) : x */
    RF_CHAIN_FN_MISH,       /* x tanh(softplus(x)) */
    RF_CHAIN_FN_COUNT_
} rf_chain_fn_t;

typedef enum rf_chain_epi_op {
    RF_CHAIN_EPI_ACT = 0,
    RF_CHAIN_EPI_ADD,
    RF_CHAIN_EPI_MUL,
} rf_chain_epi_op_t;

/* The normalizations over a row's features: the one table every reader and writer of the
 * kind uses (the package's "kind" name, which parameters it has). Flags: EPS (a positive
 * epsilon), GAMMA (an optional per-feature gain), BETA (an optional per-feature shift),
 * STREAM (the weight-streaming kernel computes it before its first linear). Adding a kind:
 * its line here, its pattern in match.c, its reference and bound in ref.c and its code in
 * the generator (python/rowfuse/kernels/chain_mma.py). */
#define RF_CHAIN_NORM_EPS 1u
#define RF_CHAIN_NORM_GAMMA 2u
#define RF_CHAIN_NORM_BETA 4u
#define RF_CHAIN_NORM_STREAM 8u
#define RF_CHAIN_NORM_LIST(X)                                                                      \
    X(LAYERNORM, "layernorm",                                                                      \
      RF_CHAIN_NORM_EPS | RF_CHAIN_NORM_GAMMA | RF_CHAIN_NORM_BETA | RF_CHAIN_NORM_STREAM)         \
    X(RMSNORM, "rmsnorm", RF_CHAIN_NORM_EPS | RF_CHAIN_NORM_GAMMA | RF_CHAIN_NORM_STREAM)          \
    X(SOFTMAX, "softmax", 0u)

#define RF_CHAIN_NORM_ENUM_(e, name, flags) RF_CHAIN_##e,
typedef enum rf_chain_norm_kind {
    RF_CHAIN_NORM_LIST(RF_CHAIN_NORM_ENUM_) RF_CHAIN_NORM_COUNT_
} rf_chain_norm_kind_t;
#undef RF_CHAIN_NORM_ENUM_

typedef struct rf_chain_epi {
    rf_chain_epi_op_t op;
    rf_chain_fn_t fn; /* act */
    int src;          /* add, mul: the value combined with the accumulator */
    float alpha;      /* act: the fn's parameter (leaky_relu's slope below 0), else 0 */
} rf_chain_epi_t;

typedef struct rf_chain_stage {
    rf_chain_op_t op;
    int src;  /* linear, gated, act, norm: the input; add, mul: operand a */
    int src2; /* add, mul: operand b; -1 otherwise */
    int dst;
    int64_t k, n;         /* linear, gated: W is [k, n] */
    const float *w, *b;   /* linear: W and bias (NULL: none); gated: the gate's */
    const float *wu, *bu; /* gated: the up projection's */
    rf_chain_fn_t fn;     /* act, gated */
    float alpha;          /* act, gated: fn's parameter (leaky_relu), else 0 */
    int n_epi;            /* linear */
    rf_chain_epi_t epi[RF_CHAIN_MAX_EPILOGUE];
    rf_chain_norm_kind_t norm; /* norm */
    double eps;
    const float *gamma, *beta; /* norm: [width] or NULL */
    int node;                  /* the graph node it came from (-1: none), for messages */
} rf_chain_stage_t;

typedef struct rf_chain_value {
    int64_t width;
    rf_dtype_t dtype; /* RF_DTYPE_F16 or RF_DTYPE_F32 (rf_chain_assign_dtypes) */
} rf_chain_value_t;

typedef struct rf_chain {
    rf_allocator_t allocator;
    rf_arena_t arena;
    int n_values, n_stages;
    rf_chain_value_t values[RF_CHAIN_MAX_STAGES + 1];
    rf_chain_stage_t stages[RF_CHAIN_MAX_STAGES];
    int64_t rows; /* rows of the model it was matched from (B*T for [B, T, C]); 0: unknown */
} rf_chain_t;

/* ---- chain.c: construction, rules, names ---- */

rf_status_t rf_chain_create(rf_allocator_t allocator, int64_t in_width, rf_chain_t **out_chain);
void rf_chain_destroy(rf_chain_t *chain);

/* Appends a stage producing a new value of `width`; sets stage->dst. *out_stage points into
 * the chain (valid until it is destroyed). */
rf_status_t rf_chain_add_stage(rf_chain_t *chain, rf_chain_op_t op, int64_t width,
                               rf_chain_stage_t **out_stage);
/* Copies n floats into the chain's arena (weights). */
rf_status_t rf_chain_copy_floats(rf_chain_t *chain, const float *src, size_t n, float **out);
rf_status_t rf_chain_alloc_floats(rf_chain_t *chain, size_t n, float **out);

int64_t rf_chain_in_width(const rf_chain_t *chain);
int64_t rf_chain_out_width(const rf_chain_t *chain);

/* Structural check: every operand an earlier value of the right width, weights present,
 * epilogue operands produced before the stage, dst ids in order. Errors name the stage. */
rf_status_t rf_chain_validate(const rf_chain_t *chain);
/* Folds matcher-level stages into the contract's form: mul(F(linear(s)), linear(s)) into a
 * gated stage; act/add/mul of a linear's output used only there into the linear's epilogue
 * (the linear moves to just before the stage it fuses with); then renumbers the values in
 * stage order. A mul that cannot be folded is RF_CODE_UNSUPPORTED naming its node. */
rf_status_t rf_chain_fuse(rf_chain_t *chain, const rf_graph_t *graph_for_messages);
/* The precision rule above. */
void rf_chain_assign_dtypes(rf_chain_t *chain);

const char *rf_chain_op_name(rf_chain_op_t op);            /* "linear", "gated", ... */
const char *rf_chain_fn_name(rf_chain_fn_t fn);            /* "relu", "gelu_erf", ... */
int rf_chain_fn_parametric(rf_chain_fn_t fn);              /* leaky_relu, elu: alpha matters */
const char *rf_chain_norm_name(rf_chain_norm_kind_t kind); /* "layernorm", ... */
unsigned rf_chain_norm_flags(rf_chain_norm_kind_t kind);   /* RF_CHAIN_NORM_* */
/* The kind named `name`; 0 when there is none. */
int rf_chain_norm_parse(const char *name, rf_chain_norm_kind_t *out_kind);
const char *rf_chain_epi_name(rf_chain_epi_op_t op); /* "act", "add", "mul" */
/* -1 when unknown. */
int rf_chain_fn_from_name(const char *name);
/* One line per stage ("s1 linear v0[768] -> v1[3072] f16  +gelu_erf"), into buf. */
void rf_chain_describe(const rf_chain_t *chain, char *buf, size_t size);

/* f(x) in double, and sup |f'| (the Lipschitz constant) over the reals. */
double rf_chain_fn_eval(rf_chain_fn_t fn, double alpha, double x);
/* F in fp32 as the kernels compute it (the CPU models of a kernel: split.c, the tests). */
float rf_chain_fn_eval32(rf_chain_fn_t fn, float alpha, float x);
double rf_chain_fn_lipschitz(rf_chain_fn_t fn, double alpha);

/* ---- match.c: the verified graph -> chain ---- */

/* Builds the chain of a verified graph: one float input X [rows, C] or [B, T, C] (flattened to
 * B*T rows when every op of the block acts on the last axis alone), one output. The returned
 * chain is fused, validated and has its dtypes assigned. What does not match is
 * RF_CODE_UNSUPPORTED naming the node and the stage kind rowfuse lacks, with a fix where
 * there is one. */
rf_status_t rf_chain_match(rf_allocator_t allocator, const rf_graph_t *graph,
                           const rf_contract_t *contract, rf_chain_t **out_chain);

/* ---- ref.c: the reference and its error bound ---- */

typedef enum rf_chain_precision {
    RF_CHAIN_FP64 = 0, /* double throughout, the weights as the chain holds them */
    RF_CHAIN_MIXED,    /* the plan's: W in fp16, each value rounded to its dtype */
} rf_chain_precision_t;

/* Accumulation error model of a kernel that follows the plan: a dot product of length K
 * is accumulated in fp32 by an MMA that adds 16 exact products at a time, so it makes
 * K' = ceil(K/16) + 1 fp32 additions; its error is at most RF_CHAIN_ACC_FACTOR * K' * u32 *
 * sum |terms| (u32 = 2^-24; the factor 4 covers the tensor cores' truncating alignment, as
 * the residual MLP's gate). Row reductions of norms (mean, variance, mean square) over C
 * values in any order: (C - 1) * u32 * sum |terms|. Elementwise functions are evaluated in
 * fp32 within RF_CHAIN_FN_ULPS * u32 * (|f(t)| + |t|) (libm-accurate erff/expf/tanhf and
 * the roundings of the formula around them; not the .approx instructions), every other fp32
 * operation within one rounding. */
#define RF_CHAIN_ACC_FACTOR 4.0
#define RF_CHAIN_FN_ULPS 16.0

/* Runs the chain on rows of X (fp16 bits, [rows, in_width]) into out_y ([rows, out_width],
 * double). out_bound (NULL: not computed) receives per element a bound on |y_k - out_y| for
 * any y_k a kernel following the plan computes under the error model above from the same X:
 * for MIXED, the allowance of a kernel against this reference; for FP64, how far the plan's
 * arithmetic (fp16 weights and stored values included) may move the output from the exact
 * function, so the MIXED reference itself lies within it. */
rf_status_t rf_chain_reference(const rf_chain_t *chain, const uint16_t *x_f16, int64_t rows,
                               rf_chain_precision_t precision, double *out_y, double *out_bound);

/* ---- load.c: a chain package back into a chain ----
 *
 * Reads `dir`/plan.json (its "chain" object: widths, the values' dtypes, the stages with their
 * weight offsets) and `dir`/weights.bin (wh fp16, wf fp32 at the recorded byte offsets) into
 * a chain holding the plan's fp16 weights, so the reference needs no ONNX file. Errors name
 * the file and the field; the values' dtypes must be the precision rule's. */
rf_status_t rf_chain_load_package(rf_allocator_t allocator, const char *dir,
                                  rf_chain_t **out_chain);

/* ---- api.c: one call from an ONNX file, for tools and the Python tests (librowfuse.so) ----
 *
 * Imports, infers shapes, verifies and matches the model at `path`, then (when rows > 0)
 * runs the chain's reference on X (fp16 bits, [rows, in_width]) into out_y and out_bound
 * (as rf_chain_reference; precision 0 = FP64, 1 = MIXED). desc (may be NULL) receives
 * rf_chain_describe's text; widths (may be NULL) receives in_width, out_width and the
 * model's rows. The status is the caller's (rf_status_free). */
rf_status_t rf_chain_onnx_reference(const char *path, const uint16_t *x, int64_t rows,
                                    int precision, double *out_y, double *out_bound, char *desc,
                                    size_t desc_size, int64_t widths[3]);

#endif
