"""The dataset engine: parts, executors, merge, deduplication, exclusion, splits and writers.

It knows records, not where kernels come from: sources (``jit.code.engine.source``) feed it.
"""
