/* The chain IR (chain.h): construction, the structural rules, the fusion of matcher-level
 * stages into the contract's form, the precision rule and the names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chain/chain.h"

static const char *const rf_chain_op_names[] = {
    "linear", "gated", "act", "add", "norm", "mul",
};
static const char *const rf_chain_fn_names[] = {
    "relu",     "gelu_erf", "gelu_tanh", "silu",       "sigmoid", "tanh", "identity",
    "softplus", "exp",      "sin",       "leaky_relu", "elu",     "mish",
};

_Static_assert(sizeof rf_chain_op_names / sizeof rf_chain_op_names[0] == RF_CHAIN_OP_COUNT_,
               "a name for every stage op");
_Static_assert(sizeof rf_chain_fn_names / sizeof rf_chain_fn_names[0] == RF_CHAIN_FN_COUNT_,
               "a name for every activation");

const char *rf_chain_op_name(rf_chain_op_t op) {
    return (int)op >= 0 && op < RF_CHAIN_OP_COUNT_ ? rf_chain_op_names[op] : "?";
}

int rf_chain_fn_parametric(rf_chain_fn_t fn) {
    return fn == RF_CHAIN_FN_LEAKY_RELU || fn == RF_CHAIN_FN_ELU;
}

const char *rf_chain_fn_name(rf_chain_fn_t fn) {
    return (int)fn >= 0 && fn < RF_CHAIN_FN_COUNT_ ? rf_chain_fn_names[fn] : "?";
}

#define RF_CHAIN_NORM_ROW_(e, name, flags) {name, flags},
static const struct {
    const char *name;
    unsigned flags;
} rf_chain_norms[] = {RF_CHAIN_NORM_LIST(RF_CHAIN_NORM_ROW_)};
#undef RF_CHAIN_NORM_ROW_

const char *rf_chain_norm_name(rf_chain_norm_kind_t kind) {
    return (int)kind >= 0 && kind < RF_CHAIN_NORM_COUNT_ ? rf_chain_norms[kind].name : "?";
}

unsigned rf_chain_norm_flags(rf_chain_norm_kind_t kind) {
    return (int)kind >= 0 && kind < RF_CHAIN_NORM_COUNT_ ? rf_chain_norms[kind].flags : 0u;
}

int rf_chain_norm_parse(const char *name, rf_chain_norm_kind_t *out_kind) {
    for (int i = 0; name && i < RF_CHAIN_NORM_COUNT_; i++)
        if (!strcmp(name, rf_chain_norms[i].name)) {
            *out_kind = (rf_chain_norm_kind_t)i;
            return 1;
        }
    return 0;
}

const char *rf_chain_epi_name(rf_chain_epi_op_t op) {
    return op == RF_CHAIN_EPI_ACT ? "act" : op == RF_CHAIN_EPI_ADD ? "add" : "mul";
}

int rf_chain_fn_from_name(const char *name) {
    for (int i = 0; name && i < RF_CHAIN_FN_COUNT_; i++)
        if (strcmp(name, rf_chain_fn_names[i]) == 0)
            return i;
    return -1;
}

double rf_chain_fn_eval(rf_chain_fn_t fn, double alpha, double x) {
    switch (fn) {
    case RF_CHAIN_FN_RELU:
        return x < 0.0 ? 0.0 : x;
    case RF_CHAIN_FN_GELU_ERF:
        return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case RF_CHAIN_FN_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case RF_CHAIN_FN_SILU:
        return x >= 0.0 ? x / (1.0 + exp(-x)) : x * exp(x) / (1.0 + exp(x));
    case RF_CHAIN_FN_SIGMOID:
        return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case RF_CHAIN_FN_TANH:
        return tanh(x);
    case RF_CHAIN_FN_SOFTPLUS:
        return (x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x)));
    case RF_CHAIN_FN_EXP:
        return exp(x);
    case RF_CHAIN_FN_SIN:
        return sin(x);
    case RF_CHAIN_FN_LEAKY_RELU:
        return x < 0.0 ? alpha * x : x;
    case RF_CHAIN_FN_ELU:
        return x < 0.0 ? alpha * expm1(x) : x;
    case RF_CHAIN_FN_MISH:
        return x * tanh((x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x))));
    case RF_CHAIN_FN_IDENTITY:
    default:
        return x;
    }
}

float rf_chain_fn_eval32(rf_chain_fn_t fn, float alpha, float x) {
    switch (fn) {
    case RF_CHAIN_FN_RELU:
        return x < 0.0f ? 0.0f : x;
    case RF_CHAIN_FN_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.70710678f));
    case RF_CHAIN_FN_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
    case RF_CHAIN_FN_SILU:
        return x / (1.0f + expf(-x));
    case RF_CHAIN_FN_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case RF_CHAIN_FN_TANH:
        return tanhf(x);
    case RF_CHAIN_FN_SOFTPLUS:
        return (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x)));
    case RF_CHAIN_FN_EXP:
        return expf(x);
    case RF_CHAIN_FN_SIN:
        return sinf(x);
    case RF_CHAIN_FN_LEAKY_RELU:
        return x < 0.0f ? alpha * x : x;
    case RF_CHAIN_FN_ELU:
        return x < 0.0f ? alpha * expm1f(x) : x;
    case RF_CHAIN_FN_MISH:
        return x * tanhf((x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))));
    case RF_CHAIN_FN_IDENTITY:
    default:
        return x;
    }
}

/* sup |f'|: GELU (both forms) reaches 1.1289 near x = 2.4, SiLU 1.0998 near x = 2.4. */
double rf_chain_fn_lipschitz(rf_chain_fn_t fn, double alpha) {
    switch (fn) {
    case RF_CHAIN_FN_GELU_ERF:
    case RF_CHAIN_FN_GELU_TANH:
        return 1.13;
    case RF_CHAIN_FN_SILU:
        return 1.1;
    case RF_CHAIN_FN_SIGMOID:
        return 0.25;
    case RF_CHAIN_FN_EXP: /* unbounded: its bound moves with the interval's ends (ref.c) */
        return INFINITY;
    case RF_CHAIN_FN_LEAKY_RELU:
    case RF_CHAIN_FN_ELU: /* ELU's slope below 0 is alpha e^x <= |alpha| */
        return fabs(alpha) > 1.0 ? fabs(alpha) : 1.0;
    case RF_CHAIN_FN_MISH: /* its largest slope, 1.0885 near x = 1.49 */
        return 1.09;
    default:
        return 1.0;
    }
}

rf_status_t rf_chain_create(rf_allocator_t a, int64_t in_width, rf_chain_t **out_chain) {
    *out_chain = NULL;
    if (in_width < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "chain input width %lld; must be >= 1",
                      (long long)in_width);
    void *p;
    RF_RETURN_IF_ERROR_PLAIN(rf_alloc_zeroed(a, 1, sizeof(rf_chain_t), "chain", &p));
    rf_chain_t *c = p;
    c->allocator = a;
    rf_arena_init(&c->arena, a);
    c->n_values = 1;
    c->values[0].width = in_width;
    c->values[0].dtype = RF_DTYPE_F16;
    *out_chain = c;
    return RF_OK;
}

void rf_chain_destroy(rf_chain_t *c) {
    if (!c)
        return;
    rf_allocator_t a = c->allocator;
    rf_arena_deinit(&c->arena);
    rf_free(a, c);
}

rf_status_t rf_chain_add_stage(rf_chain_t *c, rf_chain_op_t op, int64_t width,
                               rf_chain_stage_t **out_stage) {
    *out_stage = NULL;
    if (c->n_stages >= RF_CHAIN_MAX_STAGES)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the block has more than %d stages",
                      RF_CHAIN_MAX_STAGES);
    if (width < 1)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "a %s stage of width %lld", rf_chain_op_name(op),
                      (long long)width);
    rf_chain_stage_t *s = &c->stages[c->n_stages++];
    memset(s, 0, sizeof *s);
    s->op = op;
    s->src = s->src2 = -1;
    s->fn = RF_CHAIN_FN_IDENTITY;
    s->node = -1;
    s->dst = c->n_values;
    c->values[c->n_values].width = width;
    c->values[c->n_values].dtype = RF_DTYPE_F32;
    c->n_values++;
    *out_stage = s;
    return RF_OK;
}

rf_status_t rf_chain_alloc_floats(rf_chain_t *c, size_t n, float **out) {
    void *p;
    *out = NULL;
    if (n > ((size_t)1 << 40))
        return RF_ERR(RF_CODE_UNSUPPORTED, "%zu weights in one array", n);
    RF_RETURN_IF_ERROR_PLAIN(rf_arena_alloc(&c->arena, (n ? n : 1) * sizeof(float), &p));
    *out = p;
    return RF_OK;
}

rf_status_t rf_chain_copy_floats(rf_chain_t *c, const float *src, size_t n, float **out) {
    RF_RETURN_IF_ERROR_PLAIN(rf_chain_alloc_floats(c, n, out));
    if (n)
        memcpy(*out, src, n * sizeof(float));
    return RF_OK;
}

int64_t rf_chain_in_width(const rf_chain_t *c) {
    return c->values[0].width;
}

int64_t rf_chain_out_width(const rf_chain_t *c) {
    return c->values[c->n_values - 1].width;
}

/* ---- validation ---- */

static rf_status_t rf_chain_check_operand(const rf_chain_t *c, int s, int v, int64_t width,
                                          const char *what) {
    const rf_chain_stage_t *st = &c->stages[s];
    if (v < 0 || v >= st->dst)
        return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                      "stage %d (%s): %s is value %d, which is not produced before the stage", s,
                      rf_chain_op_name(st->op), what, v);
    if (width >= 0 && c->values[v].width != width)
        return RF_ERR(
            RF_CODE_SHAPE_ERROR, "stage %d (%s): %s v%d has width %lld, the stage needs %lld", s,
            rf_chain_op_name(st->op), what, v, (long long)c->values[v].width, (long long)width);
    return RF_OK;
}

rf_status_t rf_chain_validate(const rf_chain_t *c) {
    if (!c || c->n_stages < 1)
        return RF_ERR(RF_CODE_UNSUPPORTED, "the block has no stages: nothing to compile");
    if (c->n_values != c->n_stages + 1)
        return RF_ERR(RF_CODE_INTERNAL, "chain has %d values for %d stages", c->n_values,
                      c->n_stages);
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        int64_t w = c->values[st->dst].width;
        if (st->dst != s + 1)
            return RF_ERR(RF_CODE_INTERNAL, "stage %d produces v%d; stages produce values in order",
                          s, st->dst);
        switch (st->op) {
        case RF_CHAIN_LINEAR:
        case RF_CHAIN_GATED:
            RF_RETURN_IF_ERROR_PLAIN(rf_chain_check_operand(c, s, st->src, st->k, "the input"));
            if (st->n != w || st->k < 1 || !st->w || (st->op == RF_CHAIN_GATED && !st->wu))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT,
                              "stage %d (%s): W is [%lld, %lld] for an output of width %lld", s,
                              rf_chain_op_name(st->op), (long long)st->k, (long long)st->n,
                              (long long)w);
            if (st->op == RF_CHAIN_GATED && st->n_epi)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d (gated) has an epilogue", s);
            if (st->n_epi < 0 || st->n_epi > RF_CHAIN_MAX_EPILOGUE)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: %d epilogue ops", s, st->n_epi);
            for (int e = 0; e < st->n_epi; e++) {
                const rf_chain_epi_t *ep = &st->epi[e];
                if (ep->op == RF_CHAIN_EPI_ACT) {
                    if ((int)ep->fn < 0 || ep->fn >= RF_CHAIN_FN_COUNT_ || !isfinite(ep->alpha))
                        return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: epilogue %d fn %d", s, e,
                                      (int)ep->fn);
                    continue;
                }
                RF_RETURN_IF_ERROR_PLAIN(
                    rf_chain_check_operand(c, s, ep->src, st->n, "an epilogue operand"));
            }
            break;
        case RF_CHAIN_ACT:
            RF_RETURN_IF_ERROR_PLAIN(rf_chain_check_operand(c, s, st->src, w, "the input"));
            if ((int)st->fn < 0 || st->fn >= RF_CHAIN_FN_COUNT_ || !isfinite(st->alpha))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: fn %d", s, (int)st->fn);
            break;
        case RF_CHAIN_ADD:
        case RF_CHAIN_MUL:
            RF_RETURN_IF_ERROR_PLAIN(rf_chain_check_operand(c, s, st->src, w, "operand a"));
            RF_RETURN_IF_ERROR_PLAIN(rf_chain_check_operand(c, s, st->src2, w, "operand b"));
            break;
        case RF_CHAIN_NORM:
            RF_RETURN_IF_ERROR_PLAIN(rf_chain_check_operand(c, s, st->src, w, "the input"));
            if ((int)st->norm < 0 || st->norm >= RF_CHAIN_NORM_COUNT_)
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d (norm): kind %d", s,
                              (int)st->norm);
            if (!(st->eps >= 0.0) || !isfinite(st->eps))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d (norm): epsilon %g", s, st->eps);
            if (st->gamma && !(rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_GAMMA))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: %s has no gamma", s,
                              rf_chain_norm_name(st->norm));
            if (st->beta && !(rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_BETA))
                return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: %s has no beta", s,
                              rf_chain_norm_name(st->norm));
            break;
        default:
            return RF_ERR(RF_CODE_INVALID_ARGUMENT, "stage %d: kind %d", s, (int)st->op);
        }
    }
    return RF_OK;
}

/* ---- fusion ---- */

/* How many times value v is read (stage operands and epilogue operands); the last value
 * counts one more (the output). */
static int rf_chain_uses(const rf_chain_t *c, int v) {
    int n = v == c->n_values - 1;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (st->src == v)
            n++;
        if (st->src2 == v)
            n++;
        for (int e = 0; e < st->n_epi; e++)
            if (st->epi[e].op != RF_CHAIN_EPI_ACT && st->epi[e].src == v)
                n++;
    }
    return n;
}

/* The stage producing v, or -1 for X. */
static int rf_chain_producer(const rf_chain_t *c, int v) {
    for (int s = 0; s < c->n_stages; s++)
        if (c->stages[s].dst == v)
            return s;
    return -1;
}

/* Removes stage s (its value stays allocated until the renumbering). */
static void rf_chain_remove(rf_chain_t *c, int s) {
    memmove(&c->stages[s], &c->stages[s + 1],
            sizeof(rf_chain_stage_t) * (size_t)(c->n_stages - s - 1));
    c->n_stages--;
}

/* Moves stage `from` to just before stage `to` (from < to); returns the new index. */
static int rf_chain_move_before(rf_chain_t *c, int from, int to) {
    rf_chain_stage_t tmp = c->stages[from];
    memmove(&c->stages[from], &c->stages[from + 1],
            sizeof(rf_chain_stage_t) * (size_t)(to - from - 1));
    c->stages[to - 1] = tmp;
    return to - 1;
}

/* Is stage p a plain linear (no epilogue) whose output one stage alone reads? */
static int rf_chain_plain_linear(const rf_chain_t *c, int p) {
    return p >= 0 && c->stages[p].op == RF_CHAIN_LINEAR && c->stages[p].n_epi == 0 &&
           rf_chain_uses(c, c->stages[p].dst) == 1;
}

/* mul(F(linear_g(s)), linear_u(s)) -> gated(s). Returns 1 when it folded one. */
static int rf_chain_fold_gated(rf_chain_t *c) {
    for (int m = 0; m < c->n_stages; m++) {
        rf_chain_stage_t *mul = &c->stages[m];
        if (mul->op != RF_CHAIN_MUL)
            continue;
        for (int side = 0; side < 2; side++) {
            int a = side ? mul->src2 : mul->src, u = side ? mul->src : mul->src2;
            int pa = rf_chain_producer(c, a), pu = rf_chain_producer(c, u);
            if (pa < 0 || pu < 0 || c->stages[pa].op != RF_CHAIN_ACT || rf_chain_uses(c, a) != 1)
                continue;
            int pg = rf_chain_producer(c, c->stages[pa].src);
            if (!rf_chain_plain_linear(c, pg) || !rf_chain_plain_linear(c, pu))
                continue;
            const rf_chain_stage_t *g = &c->stages[pg], *up = &c->stages[pu];
            if (g->src != up->src || g->k != up->k || g->n != up->n)
                continue;
            rf_chain_stage_t gated = *mul;
            gated.op = RF_CHAIN_GATED;
            gated.src = g->src;
            gated.src2 = -1;
            gated.k = g->k;
            gated.n = g->n;
            gated.w = g->w;
            gated.b = g->b;
            gated.wu = up->w;
            gated.bu = up->b;
            gated.fn = c->stages[pa].fn;
            gated.alpha = c->stages[pa].alpha;
            gated.node = g->node;
            c->stages[m] = gated;
            int rm[3] = {pg, pa, pu}; /* remove from the highest index down */
            for (int i = 0; i < 3; i++)
                for (int j = i + 1; j < 3; j++)
                    if (rm[j] > rm[i]) {
                        int t = rm[i];
                        rm[i] = rm[j];
                        rm[j] = t;
                    }
            for (int i = 0; i < 3; i++)
                rf_chain_remove(c, rm[i]);
            return 1;
        }
    }
    return 0;
}

/* act/add/mul reading the output of a linear that nothing else reads -> its epilogue. */
static int rf_chain_fold_epilogue(rf_chain_t *c) {
    for (int q = 0; q < c->n_stages; q++) {
        rf_chain_stage_t *st = &c->stages[q];
        if (st->op != RF_CHAIN_ACT && st->op != RF_CHAIN_ADD && st->op != RF_CHAIN_MUL)
            continue;
        for (int side = 0; side < (st->op == RF_CHAIN_ACT ? 1 : 2); side++) {
            int v = side ? st->src2 : st->src, other = side ? st->src : st->src2;
            int p = rf_chain_producer(c, v);
            if (p < 0 || c->stages[p].op != RF_CHAIN_LINEAR || rf_chain_uses(c, v) != 1 ||
                c->stages[p].n_epi >= RF_CHAIN_MAX_EPILOGUE ||
                (st->op != RF_CHAIN_ACT && other == v))
                continue;
            rf_chain_epi_t ep = {RF_CHAIN_EPI_ACT, st->fn, -1, st->alpha};
            if (st->op != RF_CHAIN_ACT) {
                ep.op = st->op == RF_CHAIN_ADD ? RF_CHAIN_EPI_ADD : RF_CHAIN_EPI_MUL;
                ep.src = other;
            }
            int dst = st->dst;
            p = rf_chain_move_before(c, p, q); /* every input of p is still produced before */
            rf_chain_stage_t *lin = &c->stages[p];
            lin->epi[lin->n_epi++] = ep;
            lin->dst = dst;
            rf_chain_remove(c, q);
            return 1;
        }
    }
    return 0;
}

/* Renumbers values in stage order: X stays 0, stage s produces s + 1. */
static void rf_chain_renumber(rf_chain_t *c) {
    int map[RF_CHAIN_MAX_STAGES + 1];
    rf_chain_value_t vals[RF_CHAIN_MAX_STAGES + 1];
    for (int v = 0; v < c->n_values; v++)
        map[v] = -1;
    map[0] = 0;
    vals[0] = c->values[0];
    for (int s = 0; s < c->n_stages; s++) {
        map[c->stages[s].dst] = s + 1;
        vals[s + 1] = c->values[c->stages[s].dst];
    }
    for (int s = 0; s < c->n_stages; s++) {
        rf_chain_stage_t *st = &c->stages[s];
        st->dst = map[st->dst];
        if (st->src >= 0)
            st->src = map[st->src];
        if (st->src2 >= 0)
            st->src2 = map[st->src2];
        for (int e = 0; e < st->n_epi; e++)
            if (st->epi[e].op != RF_CHAIN_EPI_ACT)
                st->epi[e].src = map[st->epi[e].src];
    }
    c->n_values = c->n_stages + 1;
    memcpy(c->values, vals, sizeof(rf_chain_value_t) * (size_t)c->n_values);
}

rf_status_t rf_chain_fuse(rf_chain_t *c, const rf_graph_t *g) {
    while (rf_chain_fold_gated(c))
        ;
    while (rf_chain_fold_epilogue(c))
        ;
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        if (st->op != RF_CHAIN_MUL)
            continue;
        char desc[RF_CHAIN_DESC_NODE];
        if (g && st->node >= 0)
            rf_node_describe(g, st->node, desc, sizeof desc);
        else
            snprintf(desc, sizeof desc, "stage %d", s);
        return RF_ERR(RF_CODE_UNSUPPORTED,
                      "%s: an elementwise product of two values is not a stage rowfuse compiles "
                      "unless one factor is a linear's output read only there (a linear "
                      "epilogue) or it is act(x Wg) * (x Wu) (a gated linear, SwiGLU/GEGLU)",
                      desc);
    }
    rf_chain_renumber(c);
    return rf_chain_validate(c);
}

/* ---- precision ---- */

void rf_chain_assign_dtypes(rf_chain_t *c) {
    for (int v = 0; v < c->n_values; v++)
        c->values[v].dtype = RF_DTYPE_F32;
    for (int s = 0; s < c->n_stages; s++)
        if (c->stages[s].op == RF_CHAIN_LINEAR || c->stages[s].op == RF_CHAIN_GATED)
            c->values[c->stages[s].src].dtype = RF_DTYPE_F16;
    c->values[0].dtype = RF_DTYPE_F16;
    c->values[c->n_values - 1].dtype = RF_DTYPE_F32;
}

/* ---- description ---- */

void rf_chain_describe(const rf_chain_t *c, char *buf, size_t size) {
    size_t used = 0;
#define RF_PUT(...)                                                                                \
    do {                                                                                           \
        if (used < size)                                                                           \
            used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);                        \
    } while (0)
    if (size)
        buf[0] = '\0';
    RF_PUT("v0[%lld] %s (X)\n", (long long)c->values[0].width, rf_dtype_name(c->values[0].dtype));
    for (int s = 0; s < c->n_stages; s++) {
        const rf_chain_stage_t *st = &c->stages[s];
        const rf_chain_value_t *d = &c->values[st->dst];
        RF_PUT("s%d %-6s", s, rf_chain_op_name(st->op));
        switch (st->op) {
        case RF_CHAIN_LINEAR:
        case RF_CHAIN_GATED:
            RF_PUT(" v%d @ W[%lld x %lld]%s", st->src, (long long)st->k, (long long)st->n,
                   st->b ? " + b" : "");
            if (st->op == RF_CHAIN_GATED)
                RF_PUT(" gated %s", rf_chain_fn_name(st->fn));
            if (st->op == RF_CHAIN_GATED && rf_chain_fn_parametric(st->fn))
                RF_PUT("(%g)", st->alpha);
            for (int e = 0; e < st->n_epi; e++) {
                if (st->epi[e].op == RF_CHAIN_EPI_ACT && rf_chain_fn_parametric(st->epi[e].fn))
                    RF_PUT(", %s(%g)", rf_chain_fn_name(st->epi[e].fn), st->epi[e].alpha);
                else if (st->epi[e].op == RF_CHAIN_EPI_ACT)
                    RF_PUT(", %s", rf_chain_fn_name(st->epi[e].fn));
                else
                    RF_PUT(", %s v%d", st->epi[e].op == RF_CHAIN_EPI_ADD ? "+" : "*",
                           st->epi[e].src);
            }
            break;
        case RF_CHAIN_ACT:
            RF_PUT(" %s(v%d)", rf_chain_fn_name(st->fn), st->src);
            if (rf_chain_fn_parametric(st->fn))
                RF_PUT(" alpha %g", st->alpha);
            break;
        case RF_CHAIN_ADD:
        case RF_CHAIN_MUL:
            RF_PUT(" v%d %s v%d", st->src, st->op == RF_CHAIN_ADD ? "+" : "*", st->src2);
            break;
        case RF_CHAIN_NORM:
            RF_PUT(" %s(v%d)", rf_chain_norm_name(st->norm), st->src);
            if (rf_chain_norm_flags(st->norm) & RF_CHAIN_NORM_EPS)
                RF_PUT(" eps %g", st->eps);
            RF_PUT("%s%s", st->gamma ? " gamma" : "", st->beta ? " beta" : "");
            break;
        default:
            break;
        }
        RF_PUT(" -> v%d[%lld] %s\n", st->dst, (long long)d->width, rf_dtype_name(d->dtype));
    }
#undef RF_PUT
}
