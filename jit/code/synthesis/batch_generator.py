"""Generated kernels in batches: the synthetic generator as a source of the dataset engine.

``GeneratedKernels`` is the source (see ``jit.code.engine.run``). In a part, each slot ``i``
holds kernel ``generate(seed, i, attempt=a)`` for the first attempt that builds, passes
validation and is neither a duplicate nor a near-duplicate (``dedup``) of a kernel kept earlier
in the part; a slot's kernel is a function of the seed and its index only, so any number of
workers give the same parts (the engine merges them in order).

Inside a part, slots are processed in batches: the batch's sources are defined in one Warp
module, built once for both devices (Warp's ``ModuleBuilder``), cut into per-kernel code, and
the module is released so Warp's registries do not grow.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import time
from dataclasses import dataclass

from jit.code import checks
from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import ExtractionError, KernelIR, extract_many
from jit.code.engine import dedup
from jit.code.engine import writers
from jit.code.engine.plan import Part, PartStats, RunSpec
from jit.code.engine.source import Source
from jit.code.records import Pair, build_record, content_id

MAX_ATTEMPTS = 6
BATCH = 64


@dataclass(frozen=True, slots=True)
class GeneratedKernels(Source):
    """The synthetic generator as a source of the engine: item ``i`` is ``generate(seed, i)``."""

    seed: int = 0
    categories: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    complexity: str = "medium"
    name = "generate"
    growable = True
    fresh_process = False

    def identity(self) -> dict:
        return {"seed": self.seed, "categories": list(self.categories or []), "sources": list(self.sources or []),
                "complexity": self.complexity}

    def size(self, run) -> int:
        return run.count

    def warm(self, run) -> None:
        warm_generator(run)

    def run_part(self, run, part, progress=None) -> PartStats:
        return run_part(run, part, progress)

    def describe(self) -> dict:
        from jit.code.synthesis.generator import CATEGORIES, GENERATOR_VERSION, SOURCES, mix

        shares: dict[str, float] = {}
        for name, weight in zip(*mix(self.categories, self.sources)):
            shares[CATEGORIES[name].source] = shares.get(CATEGORIES[name].source, 0.0) + weight
        total = sum(shares.values()) or 1.0
        return {"warp_version": wb.warp_version(), "generator_version": GENERATOR_VERSION, "seed": self.seed,
                "mix": {s: {"share": round(w / total, 4), "what": SOURCES[s][1]} for s, w in shares.items()}}

    def cleanup(self) -> None:
        wb.sweep_pch_folders()


@dataclass(slots=True)
class Slot:
    index: int
    attempt: int = 0
    spec: object = None
    cid: str = ""
    sig: object = None  # MinHash signature of the source (near-duplicate control on)
    shingles: object = None  # its sorted shingle hashes (the merge's exact decisions read them)


# ---------------------------------------------------------------------------------------------
# one batch: sources -> pairs


def _generate(run: RunSpec, slot: Slot):
    from jit.code.synthesis.generator import generate

    source = run.source
    return generate(source.seed, slot.index, source.categories or None, source.complexity, attempt=slot.attempt,
                    sources=source.sources or None)


def warm_generator(run: RunSpec) -> None:
    """Fill the generator's caches: builtin signatures, the census and, when mutants may be drawn,
    the parsed seed kernels and their fingerprints (seconds of work a forked worker then shares
    instead of repeating). The objects made so far are then left out of garbage collection: the
    collector would otherwise walk these caches again and again in every worker (about a seventh
    of the generator's time)."""
    from jit.code.synthesis.generator import choosable
    from jit.code.synthesis.categories import CATEGORIES

    _generate(run, Slot(0))
    if any(CATEGORIES[n].source == "mutants" for n in choosable(run.source.categories, run.source.sources)):
        from jit.code.synthesis import mutate

        mutate.warm()  # parses the seed kernels and takes their fingerprints
    gc.collect()
    gc.freeze()


def build_batch(specs: list, devices, backward: bool, module_name: str, block_dim: int | None = None):
    """Define and extract a batch in one Warp module.

    Returns ``([(spec, kernel, irs)], {name: reason}, handle, builds)``; ``handle.release()`` frees
    the module; ``builds`` are the extraction's builds reusable for compiling (see extract_many).

    Kernels Warp rejects are found by building the rest without them (one module per batch;
    a failure is retried per kernel only when the batch fails).
    """
    rejected: dict[str, str] = {}
    try:
        handle = wb.define([s.source for s in specs], module_name, _filenames(specs))
    except Exception:
        handle = None
    if handle is None:  # one source does not even execute: define each alone to find it
        good = []
        for s in specs:
            try:
                h = wb.define([s.source], module_name + "_probe", _filenames([s]))
                h.release()
                good.append(s)
            except Exception as exc:
                rejected[s.name] = f"define: {type(exc).__name__}"
        specs = good
        handle = wb.define([s.source for s in specs], module_name, _filenames(specs)) if specs else None
    if handle is None:
        return [], rejected, None, {}
    kernels = [handle.namespace[s.name] for s in specs]
    builds: dict = {}
    try:
        results = extract_many(kernels, devices, backward=backward, block_dim=block_dim, builds=builds)
        return list(zip(specs, kernels, results)), rejected, handle, builds
    except ExtractionError:
        pass
    ok = []
    for s, k in zip(specs, kernels):
        try:
            ok.append((s, k, extract_many([k], devices, backward=backward, block_dim=block_dim)[0]))
        except ExtractionError as exc:
            rejected[s.name] = "build: " + _short(exc.reason)
    return ok, rejected, handle, {}


def _filenames(specs) -> list[str]:
    """Stable file names: Warp quotes them in comments of the generated code."""
    return [f"{s.name}.py" for s in specs]


def _short(reason: str) -> str:
    head = reason.split(":")
    return ":".join(head[:3]).strip()[:80]


def make_record(spec, irs: dict[str, KernelIR], run: RunSpec, cid: str | None = None) -> Pair:
    ir0 = next(iter(irs.values()))
    meta = dict(spec.metadata)
    meta.update({
        "seed": spec.seed, "index": spec.index, "attempt": spec.attempt,
        "warp_version": wb.warp_version(),
        "options": ir0.metadata["options"] | {"cuda_arch": list(run.archs)},
        "devices": list(irs),
        "python_lines": spec.source.count("\n") + 1,
    })
    for device, ir in irs.items():
        meta[f"{device}_forward_lines"] = ir.forward.count("\n")
    return build_record(irs, spec.name, spec.category, spec.source, meta, cid)


# ---------------------------------------------------------------------------------------------
# one part


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc only
    except (AttributeError, OSError, TypeError):
        return None


def trim_native_heap() -> None:
    """Give the native heap's freed pages back to the OS (glibc's ``malloc_trim``; elsewhere nothing).

    glibc keeps pages a worker freed. It mattered most when Warp compiled the MathDx LTO code of
    tile kernels (``tile_matmul``, ``tile_fft``, ``tile_cholesky``) in the worker: a worker held
    1.4-1.7 GB after a few such builds instead of about 100 MB. Those compiles now run in a child
    process (``warp_backend._own_lto_compiles``); the trim still returns what a batch's own
    builds freed. Called after every batch; it costs milliseconds.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def launch_block_dim(spec) -> int | None:
    """The block_dim a kernel is launched with (tile kernels), None for the module default."""
    return spec.metadata.get("launch", {}).get("block_dim")


def run_part(run: RunSpec, part: Part, progress=None) -> PartStats:
    """Produce one part (its slots' kernels, in slot order) and write it with its marker.

    Slots are generated in order, BATCH at a time, and built in one Warp module per batch.
    Kernels launched with their own block_dim (tile kernels) wait in a queue per block_dim
    until a batch of them is full (or the part runs out), since Warp compiles a module once
    per launch block_dim.
    """
    wb.init()
    wb.silence_performance_notes()
    t0 = time.perf_counter()
    state = _PartState(run, part, progress)
    pending = [Slot(i) for i in range(part.start, part.stop)]
    queues: dict[int | None, list[Slot]] = {}
    while pending or any(queues.values()):
        batch, pending = pending[:BATCH], pending[BATCH:]
        for slot in batch:
            slot.spec = _generate(run, slot)
            queues.setdefault(launch_block_dim(slot.spec), []).append(slot)
        for key in sorted(queues, key=lambda k: -1 if k is None else k):
            queue = queues[key]
            while queue and (key is None or len(queue) >= BATCH or not pending):
                group, queue[:] = queue[:BATCH], queue[BATCH:]
                pending += state.process(group, key)
    stats = state.stats
    stats.records = len(state.done)
    stats.seconds = time.perf_counter() - t0
    state.done.finish(stats.to_dict())
    return stats


class _PartState:
    """What a part has so far: records by slot, ids and signatures of kept kernels, rejects."""

    def __init__(self, run: RunSpec, part: Part, progress):
        self.run, self.part, self.progress = run, part, progress
        self.stats = PartStats(part.number, part.start, part.stop)
        self.done = writers.PartWriter(run.out, part.number)
        self.seen: set[str] = set()
        self.near = run.near_duplicates()
        self.batches = 0

    def process(self, group: list[Slot], block_dim: int | None) -> list[Slot]:
        """Build, extract and check a group of slots; returns the slots to try again."""
        run, stats = self.run, self.stats
        retry, unique, batch_ids = [], [], set()
        for slot in group:  # dedup before paying for a build (slot order decides who is first)
            cid = slot.cid = content_id(slot.spec.source)
            if cid in self.seen or cid in batch_ids:
                stats.rejects["duplicate"] += 1
                retry.append(slot)
            elif self._near_duplicate(slot):
                stats.rejects["near-duplicate"] += 1
                retry.append(slot)
            else:
                batch_ids.add(cid)
                unique.append(slot)
        texts = {s.spec.name: Pair(s.cid, s.spec.name, s.spec.category, s.spec.source) for s in unique}
        rejected = checks.apply(run, checks.Batch(texts), needs=checks.TEXT)  # before paying for a build
        by_name = {s.spec.name: s for s in group}
        built = [s for s in unique if s.spec.name not in rejected]
        items, failed, handle, builds = build_batch(
            [s.spec for s in built], run.devices, run.backward,
            f"jit_synth_p{self.part.number}_b{self.batches}_{os.getpid()}", block_dim)
        rejected.update(failed)
        self.batches += 1
        try:
            records = {spec.name: make_record(spec, irs, run, by_name[spec.name].cid) for spec, _, irs in items}
            if items:
                batch = checks.Batch(records, {spec.name: kernel for spec, kernel, _ in items}, builds, block_dim)
                rejected.update(checks.apply(run, batch, needs=checks.LIVE))
        finally:
            if handle is not None:
                handle.release()
            trim_native_heap()
        for name, reason in rejected.items():
            stats.rejects[reason] += 1
            records.pop(name, None)
            retry.append(by_name[name])
            if self.near is not None:  # it was held as kept while its batch was checked
                self.near.remove(by_name[name].cid)
        for name, rec in records.items():
            self.seen.add(rec.id)
            slot = by_name[name]
            self.done.add(slot.index, rec.to_dict(), None if slot.sig is None else slot.sig.hashvalues, slot.shingles)
        again = []
        for slot in retry:
            slot.attempt += 1
            if slot.attempt < MAX_ATTEMPTS:
                again.append(slot)
            else:
                stats.rejects["gave up after retries"] += 1
        if self.progress is not None:
            self.progress.put((len(records), len(retry)))
        return again

    def _near_duplicate(self, slot: Slot) -> bool:
        """Is the slot's kernel near one kept in the part or earlier in its batch? If not, it is
        held as kept (like ``batch_ids``) until its build and validation say otherwise."""
        if self.near is None:
            return False
        slot.sig, slot.shingles = dedup.fingerprint(slot.spec.source)
        if self.near.find(slot.sig, slot.shingles) is not None:
            return True
        self.near.add(slot.cid, slot.sig, slot.shingles)
        return False


# ---------------------------------------------------------------------------------------------
# the run
