"""Decontamination: drop records whose Python source nearly duplicates a source in an exclusion set.

An exclusion set (``--exclude PATH``, e.g. an evaluation set) is read from one of:
  - a dataset folder (DIR/data/*.jsonl or *.parquet): each record's ``python_source``;
  - a JSONL file: each line a JSON object; its source is the first of the fields
    ``python_source``, ``code``, ``content``, ``text`` that the line has;
  - a folder of ``.py`` files (searched recursively) or one ``.py`` file: each file is a source,
    and a file with more than one kernel (a function decorated with ``@wp.kernel``) also gives
    each kernel's own source, so a record that copies one kernel of a many-kernel file is caught.

A record is excluded when the exact Jaccard similarity of its normalised-token 4-gram set and a
source's (the sets the near-duplicate control summarises, ``dedup.shingle_set``) is at least the
threshold, 0.7 by default. MinHash signatures (``dedup.signature``) and an LSH index propose the
candidates, tuned so a pair at the default threshold is missed with a probability below 1e-7; the exact
figure decides.

Why 0.7: a copy of a generated kernel with two variables renamed, its constants changed and one
line added or removed scores 0.94 on median, but below 0.8 for 6 in 100 and below 0.7 for 2 in
100 (small kernels that lost their one long line). With Warp's own example kernels as the
exclusion set, 0.7 drops 0.7% of a generated dataset, all of them mutants of those kernels; with
500 kernels of another generated run it drops 21% (0.8: 10%), because generated kernels of one
category look alike.

What it leaves out: where the engine applies the filter and how it counts it (``engine``).
"""

from __future__ import annotations

import ast
import collections
import json
import os
from collections.abc import Iterable, Iterator

import numpy as np
from datasketch import MinHashLSH

from jit.code.engine import dedup, writers
from jit.code.engine.dedup import shingle_hashes

DEFAULT_THRESHOLD = 0.7
TEXT_FIELDS = ("python_source", "code", "content", "text")
CANDIDATE_MARGIN = 0.1  # LSH bands are tuned for threshold - margin, so pairs at the threshold are kept
ESTIMATE_MARGIN = 0.2  # MinHash estimates this far below the threshold are not checked (5 standard errors)


class Exclusions:
    """Sources to exclude; ``match(python_source)`` names the source a kernel nearly duplicates."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, path: str = ""):
        if not 0 < threshold <= 1:
            raise ValueError(f"exclusion threshold must be in (0, 1], got {threshold}")
        self.threshold, self.path = threshold, path
        self._lsh = MinHashLSH(num_perm=dedup.NUM_PERM, params=dedup.bands(max(threshold - CANDIDATE_MARGIN, 0.05)))
        self._names: list[str] = []
        self._sets: list[np.ndarray] = []
        self._signatures: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self._names)

    def add(self, name: str, source: str) -> None:
        signature = dedup.signature(source)
        self._lsh.insert(len(self._names), signature, check_duplication=False)
        self._names.append(name)
        self._sets.append(shingle_hashes(source))
        self._signatures.append(signature.hashvalues)

    def match(self, source: str) -> str | None:
        """The first-added source that ``source`` nearly duplicates, or None."""
        signature = dedup.signature(source)
        candidates = sorted(self._lsh.query(signature))
        if not candidates:
            return None
        estimates = (np.stack([self._signatures[c] for c in candidates]) == signature.hashvalues).mean(axis=1)
        likely = [c for c, e in zip(candidates, estimates) if e >= self.threshold - ESTIMATE_MARGIN]
        if not likely:
            return None
        mine = shingle_hashes(source)
        if not len(mine):  # an empty set matches nothing, not even another empty one
            return None
        for c in likely:
            if dedup.jaccard(mine, self._sets[c]) >= self.threshold:
                return self._names[c]
        return None

    def matches(self, source: str) -> bool:
        return self.match(source) is not None

    def describe(self) -> dict:
        """What stats.json records about the exclusion set."""
        return {"path": os.path.abspath(self.path) if self.path else None, "sources": len(self),
                "threshold": self.threshold, "shingle": dedup.SHINGLE}


def load_exclusions(path: str, threshold: float = DEFAULT_THRESHOLD) -> Exclusions:
    """The exclusion set of ``path`` (a dataset folder, a JSONL file, a folder of .py files);
    ValueError with a one-line reason when ``path`` holds no sources."""
    exclusions = Exclusions(threshold, path)
    for name, source in sources(path):
        exclusions.add(name, source)
    if not len(exclusions):
        raise ValueError(f"{path} holds no Python sources to exclude")
    return exclusions


def sources(path: str) -> Iterator[tuple[str, str]]:
    """(name, Python source) for every source in ``path``; see the module docstring for the kinds."""
    if not os.path.exists(path):
        raise ValueError(f"{path} does not exist: give a dataset folder, a JSONL file or a folder of .py files")
    if os.path.isdir(path):
        if writers.data_files(path):
            yield from _dataset_sources(path)
            return
        files = sorted(os.path.relpath(os.path.join(root, f), path)
                       for root, _, names in os.walk(path) for f in names if f.endswith(".py"))
        if not files:
            raise ValueError(f"{path} has neither dataset shards (data/*.jsonl, data/*.parquet) nor .py files")
        for rel in files:
            yield from _python_sources(os.path.join(path, rel), rel)
    elif path.endswith(".py"):
        yield from _python_sources(path, os.path.basename(path))
    else:
        yield from _jsonl_sources(path)


def _dataset_sources(folder: str) -> Iterator[tuple[str, str]]:
    for shard in writers.data_files(folder):
        for number, record, error in writers.read_records(shard):
            if error:
                raise ValueError(f"{shard}:{number}: {error}")
            if record.get("python_source"):
                yield str(record.get("id", f"{os.path.basename(shard)}:{number}")), record["python_source"]


def _jsonl_sources(path: str) -> Iterator[tuple[str, str]]:
    try:
        f = open(path, encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    with f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise ValueError(f"{path}:{number}: not JSON; an exclusion file is JSON Lines "
                                 f"(one object a line) or a .py file") from None
            text = next((row[k] for k in TEXT_FIELDS if isinstance(row, dict) and isinstance(row.get(k), str)), None)
            if text is None:
                raise ValueError(f"{path}:{number}: no {', '.join(TEXT_FIELDS)} field with the source text")
            yield f"{os.path.basename(path)}:{number}", text


def _python_sources(path: str, name: str) -> Iterator[tuple[str, str]]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    yield name, text
    kernels = _kernels(text)
    if len(kernels) > 1:
        yield from ((f"{name}:{kernel}", code) for kernel, code in kernels)


def _kernels(text: str) -> list[tuple[str, str]]:
    """(name, source) of each top-level function of ``text`` decorated with ``wp.kernel``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines(keepends=True)
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_is_kernel(d) for d in node.decorator_list):
            first = min(d.lineno for d in node.decorator_list)
            out.append((node.name, "".join(lines[first - 1:node.end_lineno])))
    return out


def _is_kernel(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "kernel") or \
        (isinstance(target, ast.Name) and target.id == "kernel")


def filter_records(records: Iterable[dict], exclusions: Exclusions) -> tuple[Iterator[dict], collections.Counter]:
    """(the records not excluded, a Counter that counts the excluded ones under "excluded" as the
    iterator is consumed)."""
    dropped: collections.Counter = collections.Counter()

    def kept() -> Iterator[dict]:
        for record in records:
            if exclusions.matches(record.get("python_source") or ""):
                dropped["excluded"] += 1
            else:
                yield record

    return kept(), dropped
