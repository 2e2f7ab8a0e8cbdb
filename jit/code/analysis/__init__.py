"""Measures of code and datasets: tokens, realism against real Warp code, the one dataset summary."""
