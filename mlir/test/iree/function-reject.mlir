// function=NAME links one block: a module of two functions is refused, and so is a name
// another symbol holds.
// RUN: rowfuse-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect --rowfuse-to-iree="function=rowfuse_block"

// expected-error @+1 {{links one block: the module must hold one function, not 2}}
module {
  func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{function=rowfuse_block: the symbol is taken}}
  func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  "test.symbol"() {sym_name = "rowfuse_block"} : () -> ()
}
