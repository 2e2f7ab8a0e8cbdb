"""The dataset engine: records, parts and executors, deduplication, validation, writers, stats.

It knows records, not where kernels come from: the synthetic generator
(``jit.code.synthesis.batch_generator``), the module extractor (``jit.code.extraction.discover``)
and the tracer (``jit.code.extraction.trace``) are sources that feed it (see ``engine``).
"""
