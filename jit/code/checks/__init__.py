"""Checks: what a record must pass to enter a dataset (compile, run, rebuild, semantics)."""
