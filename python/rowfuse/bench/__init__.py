"""The Python benchmark host (`python -m rowfuse.bench`: harness.py), its peers
(triton_fused), the report that merges C and Python runs, and the rooflines."""
