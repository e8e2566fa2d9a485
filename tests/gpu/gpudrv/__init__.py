"""The GPU driver's subcommands (tests/gpu/gpu): one module each, with prepare (here) and
run (on the GPU machine); common.py holds what they share."""
