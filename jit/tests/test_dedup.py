"""Near-duplicate control: signatures and the index on hand-made kernels, then whole generate runs
with planted near-duplicates (within parts and across parts), checked with exact Jaccard."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import re

import pytest

from jit.code import checks
from jit.code.synthesis import batch_generator as bg
from jit.code.engine import dedup
from jit.code.engine import writers
from jit.code.synthesis import pipeline
from jit.code.synthesis.generator import item_hash
from jit.code.analysis.tokens import jaccard

KERNEL = '''
@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
              inv_mass: wp.array(dtype=float), dt: float):
    tid = wp.tid()
    vel = v[tid] + f[tid] * inv_mass[tid] * dt
    vel = vel * 0.995
    if wp.length(vel) > 10.0:
        vel = wp.normalize(vel) * 10.0
    v[tid] = vel
    x[tid] = x[tid] + vel * dt
'''
# the same kernel with a variable renamed and a constant changed
RENAMED = KERNEL.replace("vel", "speed").replace("0.995", "0.98")
# one statement more: similar but well below 0.9
LONGER = KERNEL.replace("    v[tid] = vel\n", "    v[tid] = vel\n    f[tid] = wp.vec3(0.0, 0.0, 0.0)\n")
OTHER = '''
@wp.kernel
def histogram(values: wp.array(dtype=int), bins: wp.array(dtype=int), count: int):
    i = wp.tid()
    b = wp.clamp(values[i], 0, count - 1)
    wp.atomic_add(bins, b, 1)
'''


def test_renamed_variable_and_changed_constant_are_near_duplicates():
    assert jaccard(dedup.shingle_set(KERNEL), dedup.shingle_set(RENAMED)) == 1.0  # known answer
    index = dedup.NearDuplicates(0.9)
    index.add("kernel", *dedup.fingerprint(KERNEL))
    assert index.find(*dedup.fingerprint(RENAMED)) == "kernel"
    assert index.find(*dedup.fingerprint(OTHER)) is None
    assert jaccard(dedup.shingle_set(KERNEL), dedup.shingle_set(OTHER)) < 0.5  # shared boilerplate only


def test_threshold_is_respected_exactly():
    exact = jaccard(dedup.shingle_set(KERNEL), dedup.shingle_set(LONGER))
    assert 0.6 < exact < 0.9
    assert dedup.jaccard(dedup.shingle_hashes(KERNEL), dedup.shingle_hashes(LONGER)) == exact  # hashes keep the sets
    estimate = dedup.signature(KERNEL).jaccard(dedup.signature(LONGER))
    assert abs(estimate - exact) < 0.1
    # decided on the exact similarity, whatever side of it the estimate falls on
    for threshold, near in [(exact - 0.05, True), (exact, True), (exact + 0.001, False), (0.95, False)]:
        assert estimate >= dedup.checked_from(threshold) or not near  # the pair is checked where it matters
        index = dedup.NearDuplicates(threshold)
        index.add("kernel", *dedup.fingerprint(KERNEL))
        assert (index.find(*dedup.fingerprint(LONGER)) == "kernel") is near, threshold


def test_fingerprint_is_the_signature_and_the_hashes():
    sig, hashes = dedup.fingerprint(KERNEL)
    assert list(sig.hashvalues) == list(dedup.signature(KERNEL).hashvalues)
    assert hashes.tolist() == dedup.shingle_hashes(KERNEL).tolist() and len(hashes) == len(dedup.shingle_set(KERNEL))


def test_find_names_the_earliest_kept_and_forgets_removed():
    index = dedup.NearDuplicates(0.9)
    for key in ("b", "a", "c"):  # added in this order: "b" is the earliest, whatever the key order
        index.add(key, *dedup.fingerprint(KERNEL))
    assert index.find(*dedup.fingerprint(RENAMED)) == "b"
    index.remove("b")
    assert index.find(*dedup.fingerprint(RENAMED)) == "a" and "b" not in index and len(index) == 2
    with pytest.raises(ValueError):
        dedup.NearDuplicates(0)


# ---------------------------------------------------------------------------------------------
# generate runs with planted near-duplicates

TWIN_EVERY = 5  # parts hold 10 slots: twins at 5, 15, 25 fall inside a part, 10, 20, 30 across parts


def _with_twins(real):
    """Slot ``i`` (a multiple of TWIN_EVERY) first draws kernel ``i - 1`` with ``i``'s names and its
    first parameter renamed: another id, the same normalised tokens (Jaccard 1)."""
    def generate(run, slot):
        if slot.index % TWIN_EVERY or slot.index == 0 or slot.attempt:
            return real(run, slot)
        before = real(run, bg.Slot(slot.index - 1))
        old, new = item_hash(run.source.seed, slot.index - 1, 0), item_hash(run.source.seed, slot.index, 0)
        kernel = next(n for n in ast.parse(before.source).body if isinstance(n, ast.FunctionDef) and n.name == before.name)
        param = kernel.args.args[0].arg
        source = re.sub(rf"(?<![.\w]){param}\b", f"{param}_twin", before.source.replace(old, new))
        return dataclasses.replace(before, name=before.name.replace(old, new), source=source, index=slot.index)
    return generate


def _is_twin(record) -> bool:
    meta = record["metadata"]
    return meta["index"] % TWIN_EVERY == 0 and meta["index"] > 0 and meta["attempt"] == 0


def _argv(out, workers=1, threshold="0.9") -> list[str]:
    return ["--count", "30", "--output", str(out), "--seed", "7", "--shard-size", "10", "--workers", str(workers),
            "--validate", "none", "--device", "cpu", "--no-backward", "--categories", "arithmetic",
            "--complexity", "small", "--near-dup-threshold", threshold, "-q"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same 30-record run (a category without natural near-duplicates, plus twins) with
    1 and 2 workers, and with near-duplicate control off."""
    tmp = tmp_path_factory.mktemp("near")
    out = {}
    with pytest.MonkeyPatch.context() as mp:  # forked workers inherit the patch
        mp.setattr(bg, "_generate", _with_twins(bg._generate))
        # no semantic gate: it would redraw some twins' originals, and the counts below are planted ones
        mp.setitem(checks.ALIASES, "none", ())
        for name, workers, threshold in [("w1", 1, "0.9"), ("w2", 2, "0.9"), ("off", 1, "off")]:
            out[name] = tmp / name
            assert pipeline.main(_argv(out[name], workers, threshold)) == 0
    return out


def _stats(out) -> dict:
    return json.loads((out / "stats.json").read_text())


def test_same_records_for_one_and_two_workers(runs):
    one = [open(p, "rb").read() for p in writers.data_files(str(runs["w1"]))]
    two = [open(p, "rb").read() for p in writers.data_files(str(runs["w2"]))]
    assert one == two and len(one) == 3
    assert _stats(runs["w1"])["near_duplicates"] == _stats(runs["w2"])["near_duplicates"]


def test_near_duplicates_are_dropped_and_counted(runs):
    kept = list(writers.read_dataset(str(runs["w1"])))
    assert len(kept) == 30 and not any(_is_twin(r) for r in kept)
    near = _stats(runs["w1"])["near_duplicates"]
    assert near["threshold"] == 0.9
    assert near["within_parts"] >= 3 and near["across_parts"] >= 3  # twins 5, 15, 25 and 10, 20, 30
    assert _stats(runs["w1"])["rejects"]["near-duplicate across parts"] == near["across_parts"]
    card = (runs["w1"] / "README.md").read_text()
    assert f"{near['within_parts']} while generating and {near['across_parts']} when merging" in card
    off = list(writers.read_dataset(str(runs["off"])))
    assert sum(_is_twin(r) for r in off) >= 5 and _stats(runs["off"])["near_duplicates"]["within_parts"] == 0
    # independent check with exact Jaccard: no pair of kept records at the threshold
    assert _max_jaccard(kept) < 0.9
    assert _max_jaccard(off) == 1.0  # the check sees the planted twins when nothing drops them


def _max_jaccard(records) -> float:
    sets = [dedup.shingle_set(r["python_source"]) for r in records]
    return max(jaccard(a, b) for a, b in itertools.combinations(sets, 2))


def test_resume_with_another_threshold_is_refused(runs, capsys):
    before = (runs["w1"] / "stats.json").read_text()
    assert pipeline.main([*_argv(runs["w1"], threshold="0.8"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "near_dup_threshold: 0.9 vs 0.8" in err
    assert (runs["w1"] / "stats.json").read_text() == before

