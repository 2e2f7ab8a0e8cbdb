"""Scoring models: a benchmark of real kernels (``bench``, ``tiers``) and the evaluation of
predictions against it (``predictions``, ``text``, ``sandbox``, ``running``, ``score``, ``baselines``)."""
