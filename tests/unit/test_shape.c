/* Tests for rf_graph_infer_shapes (src/graph/shape.c) on hand-built graphs: every op's
 * dtype and shape rule against shapes worked out by hand from the ONNX operator
 * definitions (numpy broadcasting, Gemm transposes, reductions with axes as attribute or
 * input, Reshape 0/-1, Slice clamping with negative steps...), and every error: mismatched
 * declared shapes, computed shape operands, bad broadcasts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rf_graph_build.h"
#include "rf_test.h"
#include "rowfuse/graph.h"

#define F32 RF_DTYPE_F32

static void test_matmul_gemm(void) {
    gb_new();
    int a = gb_input("a", SH(4, 2, 1, 4, 5));
    int b = gb_weight("b", SH(3, 3, 5, 6));
    int ab = gb_op("MatMul", "ab", GB_IN(a, b));
    int v = gb_input("v", SH(1, 5));
    int w = gb_weight("w", SH(2, 5, 7));
    int vw = gb_op("MatMul", "vw", GB_IN(v, w));                        /* [5] @ [5,7] -> [7] */
    int wv = gb_op("MatMul", "wv", GB_IN(w, gb_weight("k", SH(1, 7)))); /* [5,7] @ [7] -> [5] */
    int x = gb_input("x", SH(2, 64, 48));
    int w1 = gb_weight("w1", SH(2, 96, 48));
    int b1 = gb_weight("b1", SH(1, 96));
    int g1 = gb_op_a("Gemm", "g1", GB_IN(x, w1, b1), GB_ATTRS(gb_attr_int("transB", 1)));
    int xt = gb_input("xt", SH(2, 48, 64));
    int w2 = gb_weight("w2", SH(2, 48, 96));
    int c2 = gb_weight("c2", SH(2, 64, 1));
    int g2 = gb_op_a("Gemm", "g2", GB_IN(xt, w2, c2), GB_ATTRS(gb_attr_int("transA", 1)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(ab, F32, SH(4, 2, 3, 4, 6)));
    CHECK(gb_has(vw, F32, SH(1, 7)));
    CHECK(gb_has(wv, F32, SH(1, 5)));
    CHECK(gb_has(g1, F32, SH(2, 64, 96)));
    CHECK(gb_has(g2, F32, SH(2, 64, 96)));

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    w1 = gb_weight("w1", SH(2, 96, 48));
    gb_op("MatMul", "bad", GB_IN(x, w1));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 'bad' (MatMul): MatMul inner dims differ: [64, 48] @ [96, 48]");

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    w1 = gb_weight("w1", SH(2, 96, 48));
    b1 = gb_weight("b1", SH(1, 95));
    gb_op_a("Gemm", "fc", GB_IN(x, w1, b1), GB_ATTRS(gb_attr_int("transB", 1)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "(Gemm): Gemm bias C [95] does not broadcast to [64, 96]");

    gb_new();
    x = gb_input_t("x", RF_DTYPE_F16, SH(2, 64, 48));
    w1 = gb_weight("w1", SH(2, 48, 96));
    gb_op("MatMul", "mixed", GB_IN(x, w1));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "dtype mismatch: 'x' is f16, 'w1' is f32");
}

static void test_elementwise_and_unary(void) {
    gb_new();
    int x = gb_input("x", SH(3, 8, 1, 5));
    int y = gb_input("y", SH(2, 4, 1));
    int s = gb_op("Add", "s", GB_IN(x, y));
    int d = gb_op("Div", "d", GB_IN(s, gb_weight("two", SCALAR)));
    int e = gb_input_t("e", RF_DTYPE_I64, SCALAR);
    int p = gb_op("Pow", "p", GB_IN(d, e)); /* exponent may have another dtype */
    const char *unary[] = {"Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Identity"};
    int u[7];
    for (int i = 0; i < 7; i++)
        u[i] = gb_op(unary[i], unary[i], GB_IN(p));
    int c = gb_op_a("Cast", "c", GB_IN(p), GB_ATTRS(gb_attr_int("to", 10)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(s, F32, SH(3, 8, 4, 5)));
    CHECK(gb_has(d, F32, SH(3, 8, 4, 5)));
    CHECK(gb_has(p, F32, SH(3, 8, 4, 5)));
    for (int i = 0; i < 7; i++)
        CHECK(gb_has(u[i], F32, SH(3, 8, 4, 5)));
    CHECK(gb_has(c, RF_DTYPE_F16, SH(3, 8, 4, 5)));

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    y = gb_input("y", SH(2, 64, 47));
    gb_op("Mul", "m", GB_IN(x, y));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 'm' (Mul): cannot broadcast [64, 48] with [64, 47] (axis 1: 48 vs 47)");

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    gb_op_a("Cast", "c", GB_IN(x), GB_ATTRS(gb_attr_int("to", 8))); /* string */
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_UNSUPPORTED, "cast to ONNX dtype 8");
}

static void test_declared_mismatch(void) {
    gb_new();
    int x = gb_input("x", SH(2, 64, 48));
    int w = gb_weight("w", SH(2, 48, 96));
    int o = gb_declared("h", F32, SH(2, 64, 95));
    gb_node_n("MatMul", "fc1", GB_IN(x, w), &o, 1, NULL, 0);
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 'fc1' (MatMul): output 'h' is declared [64, 95] but inferred [64, 96]");

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    o = gb_declared("r", RF_DTYPE_F16, SH(2, 64, 48));
    gb_node_n("Relu", "", GB_IN(x), &o, 1, NULL, 0);
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 (Relu): output 'r' is declared f16 but inferred f32");

    /* A matching declaration is fine. */
    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    o = gb_declared("r", F32, SH(2, 64, 48));
    gb_node_n("Relu", "", GB_IN(x), &o, 1, NULL, 0);
    CHECK_OK(rf_graph_infer_shapes(gb_graph));

    gb_new();
    int v = -1;
    CHECK_OK(rf_graph_add_value(gb_graph, "dyn", F32, NULL, &v));
    CHECK_OK(rf_graph_add_input(gb_graph, v));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "graph input 'dyn' has no static shape");
}

static void test_reductions(void) {
    gb_new();
    int x = gb_input("x", SH(3, 4, 6, 8));
    int m1 = gb_op("ReduceMean", "m1", GB_IN(x, GB_INTS("ax", -1)));
    int m2 = gb_op_a("ReduceSum", "m2", GB_IN(x, GB_INTS("ax2", 0, 2)),
                     GB_ATTRS(gb_attr_int("keepdims", 0)));
    int m3 = gb_op_a("ReduceMax", "m3", GB_IN(x), GB_ATTRS(GB_ATTR_INTS("axes", 1)));
    int m4 = gb_op("ReduceMean", "m4", GB_IN(x)); /* no axes: reduce all */
    int m5 = gb_op_a("ReduceSum", "m5", GB_IN(x), GB_ATTRS(gb_attr_int("noop_with_empty_axes", 1)));
    int m6 = gb_op_a("ReduceSum", "m6", GB_IN(x, gb_ints("empty", 0, NULL)),
                     GB_ATTRS(gb_attr_int("keepdims", 0)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(m1, F32, SH(3, 4, 6, 1)));
    CHECK(gb_has(m2, F32, SH(1, 6)));
    CHECK(gb_has(m3, F32, SH(3, 4, 1, 8)));
    CHECK(gb_has(m4, F32, SH(3, 1, 1, 1)));
    CHECK(gb_has(m5, F32, SH(3, 4, 6, 8)));
    CHECK(gb_has(m6, F32, SCALAR));

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    gb_op("ReduceMean", "m", GB_IN(x, GB_INTS("ax", 2)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 'm' (ReduceMean): axis 2 is out of range for rank 2");

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    int axes = gb_input_t("axes", RF_DTYPE_I64, SH(1, 1));
    gb_op("ReduceMean", "m", GB_IN(x, axes));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_UNSUPPORTED,
              "the axes input 'axes' is computed at run time");
}

static void test_norms(void) {
    gb_new();
    int x = gb_input("x", SH(3, 4, 6, 8));
    int sc = gb_weight("scale", SH(1, 8));
    int bi = gb_weight("bias", SH(1, 8));
    int outs[3] = {gb_tmp("y"), gb_tmp("mean"), gb_tmp("inv")};
    gb_node_n("LayerNormalization", "ln", GB_IN(x, sc, bi), outs, 3,
              GB_ATTRS(gb_attr_int("axis", -1), gb_attr_float("epsilon", 1e-5)));
    int sc2 = gb_weight("scale2", SH(2, 6, 8));
    int y2 = gb_op_a("LayerNormalization", "y2", GB_IN(x, sc2), GB_ATTRS(gb_attr_int("axis", 1)));
    int sm = gb_op_a("Softmax", "sm", GB_IN(x), GB_ATTRS(gb_attr_int("axis", 1)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(outs[0], F32, SH(3, 4, 6, 8)));
    CHECK(gb_has(outs[1], F32, SH(3, 4, 6, 1)));
    CHECK(gb_has(outs[2], F32, SH(3, 4, 6, 1)));
    CHECK(gb_has(y2, F32, SH(3, 4, 6, 8)));
    CHECK(gb_has(sm, F32, SH(3, 4, 6, 8)));

    gb_new();
    x = gb_input("x", SH(2, 4, 8));
    sc = gb_weight("scale", SH(1, 4));
    gb_op("LayerNormalization", "ln", GB_IN(x, sc));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "scale 'scale' [4] does not broadcast to the normalized shape [8]");

    gb_new();
    x = gb_input("x", SH(2, 4, 8));
    gb_op_a("Softmax", "sm", GB_IN(x), GB_ATTRS(gb_attr_int("axis", -3)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR, "axis -3 is out of range");
}

static void test_reshape_family(void) {
    gb_new();
    int x = gb_input("x", SH(3, 4, 6, 8));
    int r1 = gb_op("Reshape", "r1", GB_IN(x, GB_INTS("s1", 0, -1)));
    int r2 = gb_op("Reshape", "r2", GB_IN(x, GB_INTS("s2", 2, 2, 6, -1)));
    /* The shape from a Constant node with a value_ints attribute. */
    int cs = gb_tmp("cs");
    gb_node_n("Constant", "cs", NULL, 0, &cs, 1, GB_ATTRS(GB_ATTR_INTS("value_ints", 24, 8)));
    int r3 = gb_op("Reshape", "r3", GB_IN(x, cs));
    int f1 = gb_op_a("Flatten", "f1", GB_IN(x), GB_ATTRS(gb_attr_int("axis", 2)));
    int f0 = gb_op_a("Flatten", "f0", GB_IN(x), GB_ATTRS(gb_attr_int("axis", 0)));
    int t = gb_op_a("Transpose", "t", GB_IN(x), GB_ATTRS(GB_ATTR_INTS("perm", 0, 2, 1)));
    int td = gb_op("Transpose", "td", GB_IN(x)); /* default: reversed */
    int u = gb_op("Unsqueeze", "u", GB_IN(x, GB_INTS("ua", 1, -1)));
    int sq = gb_op("Squeeze", "sq", GB_IN(u, GB_INTS("sa", 1)));
    int sqa = gb_op("Squeeze", "sqa", GB_IN(u)); /* all size-1 axes */
    int one = gb_input("one", SH(3, 4, 1, 8));
    int ex = gb_op("Expand", "ex", GB_IN(one, GB_INTS("es", 2, 1, 6, 1)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(r1, F32, SH(2, 4, 48)));
    CHECK(gb_has(r2, F32, SH(4, 2, 2, 6, 8)));
    CHECK(gb_has(cs, RF_DTYPE_I64, SH(1, 2)));
    CHECK(gb_has(r3, F32, SH(2, 24, 8)));
    CHECK(gb_has(f1, F32, SH(2, 24, 8)));
    CHECK(gb_has(f0, F32, SH(2, 1, 192)));
    CHECK(gb_has(t, F32, SH(3, 4, 8, 6)));
    CHECK(gb_has(td, F32, SH(3, 8, 6, 4)));
    CHECK(gb_has(u, F32, SH(5, 4, 1, 6, 8, 1)));
    CHECK(gb_has(sq, F32, SH(4, 4, 6, 8, 1)));
    CHECK(gb_has(sqa, F32, SH(3, 4, 6, 8)));
    CHECK(gb_has(ex, F32, SH(4, 2, 4, 6, 8)));

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    gb_op("Reshape", "r", GB_IN(x, GB_INTS("s", 5, -1)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "node 0 'r' (Reshape): cannot reshape [4, 6] (24 elements) to [5, 1] with -1");

    /* A Reshape whose shape is computed: clear UNSUPPORTED naming the operand. */
    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    int shp = gb_input_t("shp", RF_DTYPE_I64, SH(1, 2));
    int sum = gb_op("Add", "computed_shape", GB_IN(shp, GB_INTS("k", 1, 1)));
    gb_op("Reshape", "r", GB_IN(x, sum));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_UNSUPPORTED,
              "node 1 'r' (Reshape): the shape input 'computed_shape' is computed at run time");

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    gb_op("Squeeze", "s", GB_IN(x, GB_INTS("a", 0)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "cannot squeeze axis 0 of size 4");

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    gb_op_a("Transpose", "t", GB_IN(x), GB_ATTRS(GB_ATTR_INTS("perm", 1, 1)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR, "perm lists axis 1 twice");

    gb_new();
    x = gb_input("x", SH(2, 4, 6));
    gb_op("Expand", "e", GB_IN(x, GB_INTS("s", 3, 6)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR, "cannot broadcast [4, 6]");
}

static void test_slice_concat_gather(void) {
    gb_new();
    int x = gb_input("x", SH(2, 64, 48));
    /* flip: start -1, end INT64_MIN, step -1 */
    int fl = gb_op("Slice", "flip",
                   GB_IN(x, GB_INTS("fs", -1), GB_INTS("fe", INT64_MIN), GB_INTS("fa", 0),
                         GB_INTS("fst", -1)));
    int hd =
        gb_op("Slice", "head", GB_IN(x, GB_INTS("hs", 0), GB_INTS("he", 63), GB_INTS("ha", 0)));
    int st = gb_op("Slice", "strided",
                   GB_IN(x, GB_INTS("ss", 1, -10), GB_INTS("se", INT64_MAX, 100),
                         GB_INTS("sa", -1, 0), GB_INTS("sst", 2, 3)));
    int bk =
        gb_op("Slice", "back",
              GB_IN(x, GB_INTS("bs", 40), GB_INTS("be", 3), GB_INTS("ba", 1), GB_INTS("bst", -5)));
    int em =
        gb_op("Slice", "empty", GB_IN(x, GB_INTS("es", 10), GB_INTS("ee", 5), GB_INTS("ea", 1)));
    int hu = gb_op("Slice", "huge_steps",
                   GB_IN(x, GB_INTS("hs2", 3, 5), GB_INTS("he2", INT64_MAX, INT64_MIN),
                         GB_INTS("ha2", 0, 1), GB_INTS("hst2", INT64_MAX, INT64_MIN)));
    int cc = gb_op_a("Concat", "cc", GB_IN(x, hd), GB_ATTRS(gb_attr_int("axis", 0)));
    int c1 = gb_op_a("Concat", "c1", GB_IN(x, x, x), GB_ATTRS(gb_attr_int("axis", -1)));
    int g0 =
        gb_op_a("Gather", "g0", GB_IN(x, GB_SCALAR("i0", 0)), GB_ATTRS(gb_attr_int("axis", 0)));
    int g1 = gb_op_a("Gather", "g1", GB_IN(x, GB_INTS("i1", 1, -1, 5)),
                     GB_ATTRS(gb_attr_int("axis", 1)));
    int cs = gb_op("CumSum", "cs", GB_IN(x, GB_SCALAR("ax", 1)));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(fl, F32, SH(2, 64, 48)));
    CHECK(gb_has(hd, F32, SH(2, 63, 48)));
    /* axis 1: 1..47 step 2 -> 24; axis 0: -10 -> 54 ..64 step 3 -> 4 */
    CHECK(gb_has(st, F32, SH(2, 4, 24)));
    CHECK(gb_has(bk, F32, SH(2, 64, 8))); /* 40,35,...,5 */
    CHECK(gb_has(em, F32, SH(2, 64, 0)));
    CHECK(gb_has(hu, F32, SH(2, 1, 1)));
    CHECK(gb_has(cc, F32, SH(2, 127, 48)));
    CHECK(gb_has(c1, F32, SH(2, 64, 144)));
    CHECK(gb_has(g0, F32, SH(1, 48)));
    CHECK(gb_has(g1, F32, SH(2, 64, 3)));
    CHECK(gb_has(cs, F32, SH(2, 64, 48)));

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    gb_op("Slice", "s",
          GB_IN(x, GB_INTS("s0", 0), GB_INTS("e0", 4), GB_INTS("a0", 0), GB_INTS("st0", 0)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR, "step 0 on axis 0");

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    gb_op_a("Gather", "g", GB_IN(x, GB_INTS("i", 64)), GB_ATTRS(gb_attr_int("axis", 0)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "index 64 is out of range for axis 0 of size 64");

    gb_new();
    x = gb_input("x", SH(2, 64, 48));
    int y = gb_input("y", SH(2, 63, 48));
    gb_op_a("Concat", "c", GB_IN(x, y), GB_ATTRS(gb_attr_int("axis", 1)));
    CHECK_ERR(rf_graph_infer_shapes(gb_graph), RF_CODE_SHAPE_ERROR,
              "cannot concatenate [64, 48] and [63, 48] along axis 1");
}

static void test_unknown_ops_and_order(void) {
    /* An unknown op leaves its outputs (and everything downstream) untyped: no error. */
    gb_new();
    int x = gb_input("x", SH(2, 64, 48));
    int w = gb_op("Weird", "w", GB_IN(x));
    int r = gb_op("Relu", "r", GB_IN(w));
    int ok = gb_op("Relu", "ok", GB_IN(x));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(!gb_val(w)->has_shape && !gb_val(r)->has_shape);
    CHECK(gb_has(ok, F32, SH(2, 64, 48)));

    /* Nodes out of order are sorted first. */
    gb_new();
    x = gb_input("x", SH(2, 5, 3));
    int a = gb_tmp("a"), b = gb_tmp("b");
    gb_node_n("Relu", "second", GB_IN(a), &b, 1, NULL, 0);
    gb_node_n("Sigmoid", "first", GB_IN(x), &a, 1, NULL, 0);
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(b, F32, SH(2, 5, 3)));

    /* A Constant node holding a tensor. */
    gb_new();
    x = gb_input("x", SH(2, 5, 3));
    int t = gb_weight("t", SH(1, 3));
    int cv = gb_tmp("cv");
    rf_attr_t ta;
    memset(&ta, 0, sizeof ta);
    ta.name = "value";
    ta.type = RF_ATTR_TENSOR;
    ta.tensor = t;
    gb_node_n("Constant", "k", NULL, 0, &cv, 1, &ta, 1);
    int s = gb_op("Add", "s", GB_IN(x, cv));
    CHECK_OK(rf_graph_infer_shapes(gb_graph));
    CHECK(gb_has(cv, F32, SH(1, 3)));
    CHECK(gb_has(s, F32, SH(2, 5, 3)));
}

int main(void) {
    test_matmul_gemm();
    test_elementwise_and_unary();
    test_declared_mismatch();
    test_reductions();
    test_norms();
    test_reshape_family();
    test_slice_concat_gather();
    test_unknown_ops_and_order();
    gb_free();
    return rf_test_finish();
}
