"""The IREE flow: block modules checked against the CPU reference (block), the bigger
model that links rowfuse's region into IREE (model), and their GPU harness (gpu)."""
