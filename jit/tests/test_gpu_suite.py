"""GPU suite (``pytest -m cuda``): generated kernels of every category launched on CUDA and on the
CPU with the same inputs must agree, forward and backward, and the pipeline's
``--validate execute --device cuda`` must execute on the GPU. Skipped (by conftest.py) without a
CUDA device."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from jit.code.checks import execute

from jit.code.engine import writers
from jit.code.synthesis import pipeline
from jit.code.synthesis.batch_generator import build_batch
from jit.code.synthesis.generator import CATEGORIES, generate

pytestmark = pytest.mark.cuda

SAMPLES = 4  # kernels per category
SEED = 2024


class Sample:
    """Generated kernels of one category, built for both devices, with seeded CPU inputs."""

    def __init__(self, category: str):
        specs = [generate(SEED, i, [category], "mixed") for i in range(SAMPLES)]
        items, self.rejected, self.handle, _ = build_batch(specs, ("cpu", "cuda"), True, f"jit_gpu_suite_{category}")
        if self.rejected and self.handle is not None:  # Warp loads every kernel of a module: drop them
            self.handle.release()
            kept = [spec for spec, _, _ in items]
            items, _, self.handle, _ = build_batch(kept, ("cpu", "cuda"), True, f"jit_gpu_suite_{category}_kept")
        self.runs = []  # (spec, kernel, plan, values)
        self.not_runnable = {}
        for spec, kernel, _ in items:
            try:
                plan = execute.plan_from_metadata(kernel, spec.metadata)
            except execute.NotRunnable as exc:
                self.not_runnable[spec.name] = exc.reason
                continue
            self.runs.append((spec, kernel, plan, execute.random_values(plan, execute.item_rng(spec))))


@pytest.fixture(scope="module")
def samples():
    built: dict[str, Sample] = {}

    def get(category: str) -> Sample:
        if category not in built:
            built[category] = Sample(category)
        return built[category]

    yield get
    for sample in built.values():
        if sample.handle is not None:
            sample.handle.release()


def runnable(sample: Sample) -> list:
    if not sample.runs:
        pytest.skip(f"no runnable kernel in the sample: {sample.not_runnable or sample.rejected}")
    return sample.runs


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_cuda_forward_matches_cpu(samples, category):
    for spec, kernel, plan, values in runnable(samples(category)):
        cpu = execute.run_outputs(kernel, plan, values, "cpu")
        gpu = execute.run_outputs(kernel, plan, values, "cuda")
        assert set(cpu) == set(gpu)
        for name in cpu:
            assert execute.agree(cpu[name], gpu[name]), f"{spec.name}.{name}:\n{spec.source}"


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_cuda_backward_matches_cpu(samples, category):
    checked = 0
    for spec, kernel, plan, values in runnable(samples(category)):
        rng = np.random.default_rng(SEED)
        loss = execute.make_loss(kernel, plan, spec.metadata.get("differentiable_outputs", []), rng, values)
        if isinstance(loss, str):
            continue
        cpu = loss.gradients(values, "cpu")
        gpu = loss.gradients(values, "cuda")
        for name in cpu:
            assert execute.agree(cpu[name], gpu[name]), f"{spec.name} d/d{name}:\n{spec.source}"
        checked += 1
    if not checked:
        pytest.skip(f"no kernel of {category} has differentiable outputs and float inputs")


def test_every_category_has_cuda_runnable_kernels(samples):
    """Apart from runtime-object categories, each category yields kernels the suite can launch."""
    empty = [c for c in sorted(CATEGORIES) if not samples(c).runs and not samples(c).not_runnable]
    assert not empty, f"categories with no kernel built: {empty}"


def test_cuda_launch_is_deterministic_without_atomics(samples):
    for category in sorted(CATEGORIES):
        for spec, kernel, plan, values in samples(category).runs:
            if not spec.metadata.get("deterministic", True) or category in ("atomic", "reduction", "tile"):
                continue
            first = execute.run_outputs(kernel, plan, values, "cuda")
            second = execute.run_outputs(kernel, plan, values, "cuda")
            assert all(execute.same_bits(first[k], second[k]) for k in first), spec.name


def test_io_examples_replay_on_cuda(samples):
    """An io example recorded on the CPU, decoded and launched on CUDA, gives (nearly) its outputs."""
    replayed = 0
    for category in sorted(CATEGORIES):
        for spec, kernel, plan, values in samples(category).runs[:1]:
            outputs = execute.run_outputs(kernel, plan, values, "cpu")
            io = json.loads(json.dumps(execute.make_io(plan, values, outputs)))
            io_plan = execute.plan_from_io(kernel, io)
            decoded = {a.name: execute.decode(a, io["inputs"][a.name]) for a in io_plan.args}
            gpu = execute.run_outputs(kernel, io_plan, decoded, "cuda")
            for a in io_plan.outputs():
                assert execute.agree(execute.decode(a, io["outputs"][a.name]), gpu[a.name]), spec.name
            replayed += 1
    assert replayed >= len(CATEGORIES) // 2


def test_pipeline_validate_execute_on_cuda(tmp_path):
    out = tmp_path / "ds"
    code = pipeline.main(["--count", "24", "--device", "cuda", "--validate", "execute", "--output", str(out),
                          "--workers", "1", "--shard-size", "24", "--seed", "5", "-q"])
    assert code == 0
    records = list(writers.read_dataset(str(out)))
    assert len(records) == 24
    executed = [r for r in records if r.get("io")]
    assert len(executed) >= 0.8 * len(records)
    for r in executed:
        assert r["validation"]["cpu"] == "executed" and r["validation"]["cuda"] == "executed", r["id"]
        assert r["validation"].get("gradient") != "failed"
    with open(os.path.join(out, "stats.json"), encoding="utf-8") as f:
        stats = json.load(f)
    assert stats["validation"].get("cuda=executed", 0) >= len(executed)
    assert execute.replay_records(executed) == {}
