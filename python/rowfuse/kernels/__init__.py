"""The CuTe DSL kernel generator, run ahead of time by `rowfuse compile` as
`python -m rowfuse.kernels.build` (README.md)."""
