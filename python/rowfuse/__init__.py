"""rowfuse: Python side of the rowfuse ML compiler lab.

Thin by design: PyTorch export (rowfuse.export), the framework baselines and plots.
Import, verification, the reference interpreter, compilation and the runtime are C.
"""
