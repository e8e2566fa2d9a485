"""rowfuse: Python side of the rowfuse ML compiler lab.

Thin by design: PyTorch export (rowfuse.export) and the torch module (rowfuse.torch) are the
user API. Import, verification, the reference interpreter, compilation and the runtime are C.

Subpackages, one per product:
    rowfuse.capi     the C binding (ctypes over librowfuse.so; names parsed from plan.h)
    rowfuse.kernels  the CuTe DSL kernel generator (`python -m rowfuse.kernels.build`)
    rowfuse.bench    the Python benchmark host and its peers, reports, rooflines
    rowfuse.iree     the IREE flow: blocks, the bigger model, their GPU harness
    rowfuse.lab      the stock-compiler lab
    rowfuse.eval     evaluation plots
"""
