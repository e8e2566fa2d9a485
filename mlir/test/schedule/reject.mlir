// Every rejection of --rowfuse-schedule: the contract is not the block rowfuse's kernels
// compute, or the planner refuses the shape or the options.
// RUN: rowfuse-opt %s -split-input-file -verify-diagnostics --rowfuse-schedule
// RUN: rowfuse-opt %s -split-input-file -verify-diagnostics --rowfuse-schedule=mode=persistent-smem
// RUN: rowfuse-opt %s -split-input-file -verify-diagnostics --rowfuse-schedule=mode=conventional
// (The splits below fail the same way under every mode.)

// The second activation is missing: the block must end in relu(residual_add(...)).
// expected-error @+1 {{the row contract must hold one residual MLP block ending in rowfuse.relu(rowfuse.residual_add(...)); found 0}}
func.func @no_final_relu(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  return %6 : tensor<49x48xf32>
}

// -----

// H is not rounded to fp16: the kernels keep H in fp16.
func.func @no_rounding(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<48x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %0 = rowfuse.linear %x, %w2 : tensor<49x48xf16>, tensor<48x48xf16> -> tensor<49x48xf32>
  %1 = rowfuse.bias %0, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %2 = rowfuse.residual_add %1, %x : tensor<49x48xf32>, tensor<49x48xf16>
  // expected-error @+1 {{not a residual MLP block rowfuse's kernels compute (Y = relu(fp16(relu(X W1 + b1)) W2 + b2 + X)): rowfuse.linear: expected rowfuse.round_f16 (H), found a function argument}}
  %3 = rowfuse.relu %2 : tensor<49x48xf32>
  return %3 : tensor<49x48xf32>
}

// -----

// The residual is not the block's input.
func.func @residual_not_x(%x: tensor<49x48xf16> {rowfuse.row}, %z: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %z : tensor<49x48xf32>, tensor<49x48xf16>
  // expected-error @+1 {{rowfuse.residual_add: the residual must be the block's input X (the first projection's input)}}
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  return %7 : tensor<49x48xf32>
}

// -----

// H escapes the block: a kernel returns only Y.
func.func @h_escapes(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> (tensor<49x48xf32>, tensor<49x96xf16>) {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  // expected-error @+1 {{rowfuse.round_f16: its result is used outside the block}}
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  return %7, %3 : tensor<49x48xf32>, tensor<49x96xf16>
}

// -----

// X itself does not depend on any row (no rowfuse.row argument).
func.func @x_row_independent(%x: tensor<49x48xf16>, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> tensor<49x48xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  // expected-error @+1 {{the block's input X is row-independent; it must be row-owned}}
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  return %7 : tensor<49x48xf32>
}

// -----

// A contract op outside the block.
func.func @stray_op(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> (tensor<49x48xf32>, tensor<49x96xf32>) {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  // expected-error @+1 {{is not part of the residual MLP block; rowfuse's kernels compute that block and nothing else}}
  %8 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  return %7, %8 : tensor<49x48xf32>, tensor<49x96xf32>
}

// -----

// Two blocks in one function (one schedule per function).
// expected-error @+1 {{the row contract must hold one residual MLP block ending in rowfuse.relu(rowfuse.residual_add(...)); found 2}}
func.func @two_blocks(%x: tensor<49x48xf16> {rowfuse.row}, %w1: tensor<48x96xf16>, %b1: tensor<96xf32>, %w2: tensor<96x48xf16>, %b2: tensor<48xf32>) -> (tensor<49x48xf32>, tensor<49x48xf32>) {
  %0 = rowfuse.linear %x, %w1 : tensor<49x48xf16>, tensor<48x96xf16> -> tensor<49x96xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<49x96xf32>, tensor<96xf32>
  %2 = rowfuse.relu %1 : tensor<49x96xf32>
  %3 = rowfuse.round_f16 %2 : tensor<49x96xf32> -> tensor<49x96xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<49x96xf16>, tensor<96x48xf16> -> tensor<49x48xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<49x48xf32>, tensor<48xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<49x48xf32>, tensor<49x48xf16>
  %7 = rowfuse.relu %6 : tensor<49x48xf32>
  %8 = rowfuse.residual_add %7, %x : tensor<49x48xf32>, tensor<49x48xf16>
  %9 = rowfuse.relu %8 : tensor<49x48xf32>
  return %7, %9 : tensor<49x48xf32>, tensor<49x48xf32>
}

// -----

// No rowfuse kernel fits 4096 channels: the fused kernels' accumulators exceed the limit,
// proj1's tiles exceed shared memory.
func.func @too_wide(%x: tensor<64x4096xf16> {rowfuse.row}, %w1: tensor<4096x64xf16>, %b1: tensor<64xf32>, %w2: tensor<64x4096xf16>, %b2: tensor<4096xf32>) -> tensor<64x4096xf32> {
  %0 = rowfuse.linear %x, %w1 : tensor<64x4096xf16>, tensor<4096x64xf16> -> tensor<64x64xf32>
  %1 = rowfuse.bias %0, %b1 : tensor<64x64xf32>, tensor<64xf32>
  %2 = rowfuse.relu %1 : tensor<64x64xf32>
  %3 = rowfuse.round_f16 %2 : tensor<64x64xf32> -> tensor<64x64xf16>
  %4 = rowfuse.linear %3, %w2 : tensor<64x64xf16>, tensor<64x4096xf16> -> tensor<64x4096xf32>
  %5 = rowfuse.bias %4, %b2 : tensor<64x4096xf32>, tensor<4096xf32>
  %6 = rowfuse.residual_add %5, %x : tensor<64x4096xf32>, tensor<64x4096xf16>
  // expected-error-re @+1 {{the planner rejects 64x4096x64: {{.*(channels 4096 need 512 fp32 accumulators per thread|needs 721920 bytes of shared memory).*}}}}
  %7 = rowfuse.relu %6 : tensor<64x4096xf32>
  return %7 : tensor<64x4096xf32>
}
