"""Evaluation reports: plots and schema check of `rowfuse eval` output (plot)."""
