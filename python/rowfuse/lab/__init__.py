"""The stock-compiler lab: models rowfuse does not take, through IREE, every stage kept.

    python -m rowfuse.lab MODEL -o DIR     (or `rowfuse lab MODEL -o DIR`)

models       the lab's models (CNN, attention with/without causal mask, unrolled GRU)
stages       torch.export -> iree-turbine -> iree-compile, phase by phase, per target
dispatches   dispatch counts and what each dispatch fused, read from the kept IR
artifacts    the folder's index.json (every artifact, its stage and size)
numerics     the fp32 tolerance and the comparison
check        the llvm-cpu module vs PyTorch on fresh random inputs
iree_run     loading and calling a .vmfb through the IREE runtime
build        one lab folder for one model (all of the above)
gpu          on the GPU machine: the CUDA modules vs PyTorch, timed beside eager/compile
report       the lab report (markdown, JSON, plot) from the GPU runs
"""
