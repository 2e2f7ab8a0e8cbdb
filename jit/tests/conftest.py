"""Shared fixtures: kernels defined from source (released afterwards) and the CUDA skip rule."""

from __future__ import annotations

import itertools

import pytest

from jit.code.extraction import warp_backend as wb

_counter = itertools.count()


def pytest_collection_modifyitems(config, items):
    cuda_items = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not cuda_items or wb.cuda_device_available():
        return
    reason = "no CUDA device: Warp found no GPU (NVRTC-only machine); CUDA launch tests need one"
    for item in cuda_items:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def define():
    """``define(source) -> namespace``: a fresh Warp module per call, released after the test."""
    handles = []

    def _define(source: str) -> dict:
        handle, names = wb.define_one(source, f"jit_test_{next(_counter)}")
        handles.append(handle)
        return names

    yield _define
    for handle in handles:
        handle.release()
