// The rowfuse dialect: the row contract of a block and the schedule it is lowered to.
//
// Contract ops (tensor semantics, what `rowfuse verify` proved about the graph):
//   rowfuse.linear, rowfuse.bias, rowfuse.relu, rowfuse.residual_add, rowfuse.round_f16
// Every value is row-owned (axis 0 is the row axis, row i depends only on input row i) or
// row-independent (weights, constants). Function arguments marked `rowfuse.row` are the
// row-owned inputs; all other values are row-owned when any operand is. The verifiers
// reject every use that would mix rows (Dialect.cpp, rowfuse::rowOwned).
//
// Schedule ops (what --rowfuse-schedule produces from a contract):
//   rowfuse.kernel   one launch of a rowfuse kernel: its family (rowfuse/plan.h's kernel
//                    modes), row tile, grid, threads, shared-memory bytes and the values
//                    that stay on chip
//   rowfuse.buffer   an intermediate that goes through global memory between or inside
//                    kernels
#ifndef ROWFUSE_OPS_TD
#define ROWFUSE_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rowfuse_Dialect : Dialect {
  let name = "rowfuse";
  let cppNamespace = "::rowfuse";
  let summary = "row contract and schedule of rowfuse's row-owned blocks";
}

class Rowfuse_Op<string mnemonic, list<Trait> traits = []>
    : Op<Rowfuse_Dialect, mnemonic, traits>;

def F16Matrix : 2DTensorOf<[F16]>;
def F32Matrix : 2DTensorOf<[F32]>;
def F32Vector : 1DTensorOf<[F32]>;

//===----------------------------------------------------------------------===//
// The row contract
//===----------------------------------------------------------------------===//

def Rowfuse_LinearOp : Rowfuse_Op<"linear", [Pure]> {
  let summary = "row-owned projection: result[i, n] = sum_k input[i, k] * weight[k, n]";
  let description = [{
    fp16 operands, fp32 accumulation and result. The weight must not depend on any row:
    contracting over a row-owned weight sums over rows (row i of the result would read
    every row), so the verifier rejects it.
  }];
  let arguments = (ins F16Matrix:$input, F16Matrix:$weight);
  let results = (outs F32Matrix:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)";
  let hasVerifier = 1;
}

def Rowfuse_BiasOp : Rowfuse_Op<"bias", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "adds a row-independent vector to every row: result[i, n] = input[i, n] + bias[n]";
  let arguments = (ins F32Matrix:$input, F32Vector:$bias);
  let results = (outs F32Matrix:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}

def Rowfuse_ReluOp : Rowfuse_Op<"relu", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "max(x, 0), element by element";
  let arguments = (ins F32Matrix:$input);
  let results = (outs F32Matrix:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Rowfuse_ResidualAddOp : Rowfuse_Op<"residual_add", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "result[i, n] = input[i, n] + residual[i, n] (residual fp16, widened)";
  let description = [{
    Both operands have the same shape, so row i of the result reads row i of each. The
    residual is fp16 (the block's input X); the sum is fp32.
  }];
  let arguments = (ins F32Matrix:$input, F16Matrix:$residual);
  let results = (outs F32Matrix:$result);
  let assemblyFormat = "$input `,` $residual attr-dict `:` type($input) `,` type($residual)";
  let hasVerifier = 1;
}

def Rowfuse_RoundF16Op : Rowfuse_Op<"round_f16", [Pure]> {
  let summary = "rounds fp32 to fp16 (nearest even), element by element";
  let arguments = (ins F32Matrix:$input);
  let results = (outs F16Matrix:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The schedule
//===----------------------------------------------------------------------===//

def Rowfuse_BufferOp : Rowfuse_Op<"buffer"> {
  let summary = "an intermediate that goes through global memory";
  let description = [{
    Names the global buffer a schedule routes an intermediate through (the hidden state
    H of persistent-gmem and conventional). Kernels write it (`buffer(...)` operand of
    rowfuse.kernel) and later kernels read the value the writer returns.
  }];
  let arguments = (ins StrAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def Rowfuse_KernelOp : Rowfuse_Op<"kernel", [AttrSizedOperandSegments]> {
  let summary = "one launch of a rowfuse kernel";
  let description = [{
    `family` is a kernel mode of rowfuse/plan.h (fused_smem, fused_gmem, proj1, proj2);
    its operands, in the kernel ABI's order (rowfuse/kernel_abi.h):
      fused_smem  (x, w1, b1, w2, b2)             -> y        h stays on chip
      fused_gmem  (x, w1, b1, w2, b2) buffer(h)   -> y        h is the kernel's scratch
      proj1       (x, w1, b1)         buffer(h)   -> h        writes h to global memory
      proj2       (x, h, w2, b2)                  -> y        h from a proj1 kernel
    `name` is the kernel's entry (the package's kernels/<name>.ptx); tile_rows, threads,
    smem_bytes and hidden_chunk are its geometry (src/compile/tiling.c); grid the blocks of
    one launch at the function's row count under the recorded `grid_rule`; `on_chip` the
    values that never leave the chip; `cluster_blocks` the blocks of a cluster that share
    each row tile (fused_wgmma's block pair, 2: each runs half the hidden chunks; else 1),
    so the grid holds at most cluster_blocks x tiles blocks, a multiple of cluster_blocks.
  }];
  let arguments = (ins
    Variadic<AnyRankedTensor>:$inputs,
    Optional<AnyRankedTensor>:$buffer,
    StrAttr:$kernel_name,
    StrAttr:$family,
    ConfinedAttr<I64Attr, [IntMinValue<1>]>:$tile_rows,
    ConfinedAttr<I64Attr, [IntMinValue<1>]>:$threads,
    ConfinedAttr<I64Attr, [IntMinValue<1>]>:$grid,
    ConfinedAttr<I64Attr, [IntMinValue<1>]>:$smem_bytes,
    ConfinedAttr<I64Attr, [IntMinValue<1>]>:$hidden_chunk,
    StrArrayAttr:$on_chip,
    StrAttr:$grid_rule,
    DefaultValuedAttr<I64Attr, "1">:$cluster_blocks);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $kernel_name $family `(` $inputs `)` (`buffer` `(` $buffer^ `:` type($buffer) `)`)?
    attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

#endif
