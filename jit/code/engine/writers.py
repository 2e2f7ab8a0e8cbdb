"""Dataset files: work parts, final shards (JSONL or Parquet), ``stats.json`` and the dataset card.

Every file is written under a temporary name and renamed when complete, so a killed run never
leaves a torn file under a final name. Layout of a finished dataset::

    DIR/data/train-00000-of-00004.jsonl   (or .parquet)
    DIR/stats.json
    DIR/README.md                          dataset card with a YAML ``configs:`` block
    DIR/.jit-synth/run.json                the run's parameters (for --resume)
    DIR/.jit-synth/parts/part-00003.jsonl  a finished work part (+ part-00003.done.json)
    DIR/.jit-synth/parts/part-00003.minhash.npy  its records' MinHash signatures, row by row
    DIR/.jit-synth/parts/part-00003.shingles.npy its records' shingle hashes (``write_shingles``)

What it leaves out: deciding what goes into a part (``batch_generator``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from jit.code.records import FIELDS

WORK = ".jit-synth"


def write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json(path: str, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# work parts


def parts_dir(out: str) -> str:
    return os.path.join(out, WORK, "parts")


def part_path(out: str, part: int) -> str:
    return os.path.join(parts_dir(out), f"part-{part:05d}.jsonl")


def done_path(out: str, part: int) -> str:
    return os.path.join(parts_dir(out), f"part-{part:05d}.done.json")


def signatures_path(out: str, part: int) -> str:
    return os.path.join(parts_dir(out), f"part-{part:05d}.minhash.npy")


def shingles_path(out: str, part: int) -> str:
    return os.path.join(parts_dir(out), f"part-{part:05d}.shingles.npy")


class PartWriter:
    """A part's records, kept on disk as they finish and written in slot order at the end.

    Records arrive out of slot order (retried slots finish later); holding them in memory
    would grow with the part, so each goes to a scratch file at once and ``finish`` copies
    them in order into the part file, then writes the completion marker (the marker is what
    resume trusts). Records' MinHash signatures and shingle hashes, when given, are small and kept
    in memory; they are written beside the part in the same order so the merge need not tokenise
    the records again (``write_shingles``).
    """

    def __init__(self, out: str, part: int):
        os.makedirs(parts_dir(out), exist_ok=True)
        self.out, self.part = out, part
        self.scratch_path = f"{part_path(out, part)}.unsorted-{os.getpid()}"
        self.scratch = open(self.scratch_path, "w+b")
        self.where: dict[int, tuple[int, int]] = {}  # slot index -> (offset, length)
        self.signatures: dict[int, np.ndarray] = {}  # slot index -> MinHash hash values
        self.shingles: dict[int, np.ndarray] = {}  # slot index -> sorted shingle hashes

    def __len__(self) -> int:
        return len(self.where)

    def add(self, index: int, record: dict, signature: np.ndarray | None = None,
            shingles: np.ndarray | None = None) -> None:
        if signature is not None:
            self.signatures[index] = signature
        if shingles is not None:
            self.shingles[index] = shingles
        data = (dumps(record) + "\n").encode("utf-8")
        self.scratch.seek(0, os.SEEK_END)
        self.where[index] = (self.scratch.tell(), len(data))
        self.scratch.write(data)

    def finish(self, stats: dict) -> None:
        path = part_path(self.out, self.part)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            for index in sorted(self.where):
                offset, length = self.where[index]
                self.scratch.seek(offset)
                f.write(self.scratch.read(length))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self.scratch.close()
        os.remove(self.scratch_path)
        if self.signatures:
            write_signatures(signatures_path(self.out, self.part), [self.signatures[i] for i in sorted(self.where)])
        if self.shingles and len(self.shingles) == len(self.where):
            write_shingles(shingles_path(self.out, self.part), [self.shingles[i] for i in sorted(self.where)])
        write_json(done_path(self.out, self.part), stats)


def write_array(path: str, array: np.ndarray) -> None:
    """``np.save`` under a temporary name, then renamed: a killed run leaves no torn array."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:  # a file object: np.save would add ".npy" to a name
        np.save(f, array)
    os.replace(tmp, path)


def write_signatures(path: str, rows: list[np.ndarray] | np.ndarray) -> None:
    write_array(path, np.stack(rows) if isinstance(rows, list) else rows)


def write_shingles(path: str, rows: list[np.ndarray]) -> None:
    """Records' shingle hashes as one uint64 array: its first len(rows) + 1 values are where each
    record's hashes start (the last is the array's length), then the hashes (``part_index.shingle_row``)."""
    lengths = np.array([len(r) for r in rows], dtype=np.uint64)
    starts = len(rows) + 1 + np.concatenate(([0], np.cumsum(lengths))).astype(np.uint64)
    write_array(path, np.concatenate([starts, *rows]).astype(np.uint64))


def read_signatures(out: str, part: int) -> np.ndarray | None:
    """A finished part's signatures, one row per record in part order (None if it has none)."""
    path = signatures_path(out, part)
    return np.load(path) if os.path.exists(path) else None


def remove_scratch(out: str) -> None:
    """Delete scratch and temporary files that killed workers left in the parts folder."""
    for path in glob.glob(os.path.join(parts_dir(out), "*.unsorted-*")) + glob.glob(os.path.join(parts_dir(out), "*.tmp-*")):
        with contextlib.suppress(OSError):
            os.remove(path)


def drop_part_records(out: str) -> None:
    """Delete finished parts' records and signatures and the merge's files (a finished dataset's
    shards hold the records); the completion markers stay, with each part's stats."""
    for path in glob.glob(os.path.join(parts_dir(out), "part-*.jsonl")) + glob.glob(os.path.join(parts_dir(out), "part-*.npy")):
        with contextlib.suppress(OSError):
            os.remove(path)
    shutil.rmtree(os.path.join(out, WORK, "merge"), ignore_errors=True)


def finished_part(out: str, part: int) -> dict | None:
    """A part's stats from its completion marker, None while it has no marker or no records file."""
    if not (os.path.exists(done_path(out, part)) and os.path.exists(part_path(out, part))):
        return None
    with open(done_path(out, part), encoding="utf-8") as f:
        return json.load(f)


def finished_parts(out: str) -> dict[int, dict]:
    done = {}
    for path in glob.glob(os.path.join(parts_dir(out), "part-*.done.json")):
        part = int(os.path.basename(path)[5:10])
        stats = finished_part(out, part)
        if stats is not None:
            done[part] = stats
    return done


def read_part(out: str, part: int) -> Iterator[dict]:
    with open(part_path(out, part), encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


# ---------------------------------------------------------------------------------------------
# final shards


def shard_name(i: int, n: int, fmt: str, split: str = "train") -> str:
    return f"{split}-{i:05d}-of-{n:05d}.{fmt}"


def data_files(out: str, split: str | None = None) -> list[str]:
    """The shards of ``out`` (of one split, or of every split), sorted by name."""
    pattern = os.path.join(out, "data", f"{split or '*'}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]")
    return sorted(glob.glob(pattern + ".jsonl") + glob.glob(pattern + ".parquet"))


def write_shards(out: str, records: Iterable[dict], total: int, shard_size: int, fmt: str,
                 split: str = "train") -> list[str]:
    """Stream ``total`` records into ``ceil(total/shard_size)`` shards of ``split``; drop that
    split's shards of another layout (other splits' shards are left alone).

    Only one shard's records are held at a time.
    """
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    n = max(1, -(-total // shard_size))
    names = [os.path.join(data, shard_name(i, n, fmt, split)) for i in range(n)]
    it = iter(records)
    for path in names:
        chunk = [r for _, r in zip(range(shard_size), it)]
        if fmt == "jsonl":
            write_atomic(path, "".join(dumps(r) + "\n" for r in chunk))
        else:
            write_parquet(path, chunk)
    for stale in set(data_files(out, split)) - set(names):
        os.remove(stale)
    return names


def _parquet_schema():
    import pyarrow as pa

    text = pa.string()
    return pa.schema([
        ("id", text), ("kernel_name", text), ("category", text), ("python_source", text),
        ("cpu_forward", text), ("cpu_backward", text), ("cuda_forward", text), ("cuda_backward", text),
        ("cpu_functions", text), ("cuda_functions", text),
        # nested, open-ended objects are stored as JSON text so every shard has one schema
        ("validation", text), ("metadata", text), ("io", text), ("cuda_ptx", text),
    ])


JSON_COLUMNS = ("validation", "metadata", "io")


def write_parquet(path: str, records: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _parquet_schema()
    columns = {}
    for name in schema.names:
        values = [r.get(name) for r in records]
        if name in JSON_COLUMNS:
            values = [None if v is None else json.dumps(v, sort_keys=True) for v in values]
        columns[name] = values
    table = pa.Table.from_pydict(columns, schema=schema)
    tmp = f"{path}.tmp-{os.getpid()}"
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_records(path: str) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line number, record or None, error or None) for every row of a shard."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist(), 1):
            for name in JSON_COLUMNS:
                if isinstance(row.get(name), str):
                    row[name] = json.loads(row[name])
            for name in ("io", "cuda_ptx"):
                if row.get(name) is None:
                    row.pop(name, None)
            yield i, row, None
        return
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                yield i, record, None
            except ValueError as exc:
                yield i, None, f"unparseable line: {exc}"


def read_stats(out: str) -> dict:
    """A dataset's stats.json ({} when it has none); ValueError when it is not JSON."""
    path = os.path.join(out, "stats.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON ({exc})") from None


def read_dataset(out: str) -> Iterator[dict]:
    for path in data_files(out):
        for _, record, error in read_records(path):
            if record is not None:
                yield record


# ---------------------------------------------------------------------------------------------
# dataset card


def _near_duplicates_note(near: dict | None) -> str:
    if near is None:
        return ""
    if not near["threshold"]:
        return "\nNear-duplicate control was off: only exact duplicates were removed.\n"
    return (f"\nNear-duplicates were removed: a kernel whose normalised-token {near['shingle']}-gram set has a "
            f"Jaccard similarity of {near['threshold']} or more with an earlier kept kernel's (MinHash estimate, "
            f"{near['num_perm']} permutations) was dropped, {near['within_parts']} while generating and "
            f"{near['across_parts']} when merging (see `stats.json`).\n")


def _sources_table(mix: dict, per_source: dict, count: int) -> str:
    rows = [f"| {name} | {m['share']:.0%} | {per_source.get(name, 0)} | {per_source.get(name, 0) / max(count, 1):.0%} |"
            for name, m in mix.items()]
    rows += [f"| {name} | - | {n} | {n / max(count, 1):.0%} |" for name, n in sorted(per_source.items()) if name not in mix]
    return "\n".join(rows)


def _realism_table(figures: dict) -> str:
    rows = [f"| {name.replace('_', ' ')} | {value} |" for name, value in figures.items() if isinstance(value, (int, float))]
    return "| figure | value |\n|---|---|\n" + "\n".join(rows) if rows else "(not measured)"


def _sources_section(stats: dict) -> str:
    """Real code (records with provenance) gets its licences; generated code its source mix."""
    if "provenance" not in stats:
        return ("## Sources\n\nEvery kernel comes from one source; the default mix draws a source by its share, then one "
                "of\nits categories (`jit-synth generate --list-categories`).\n\n"
                "| source | share of the default mix | records | share here |\n|---|---|---|---|\n"
                + _sources_table(stats.get("mix") or {}, stats.get("per_source", {}), stats.get("count", 0)) + "\n")
    rows = "\n".join(f"| {p['distribution']} | {p['license']} | {p['records']} |" for p in stats.get("provenance", []))
    contained = stats.get("self_contained") or {}
    return (f"## Sources and licences\n\nReal Warp code, {stats.get('origin') or stats.get('source')}. Each record's "
            f"`metadata` names its distribution, version, licence, module, file and line.\nThe code keeps the licence "
            f"of the code it comes from:\n\n| distribution | licence | records |\n|---|---|---|\n{rows}\n\n"
            f"{contained.get('records', 0)} of {stats.get('count', 0)} records ({contained.get('share', 0):.1%}) have a "
            "`python_source` that rebuilds the kernel on its own (`metadata.self_contained`; "
            "`metadata.self_contained_reason` says why not for the others).\n")


def _card_license(stats: dict) -> str:
    licences = {p["license"] for p in stats.get("provenance", [])}
    return "apache-2.0" if licences <= {"Apache-2.0"} else "other"


def _splits_note(splits: dict | None) -> str:
    if not splits or list(splits) == ["train"]:
        return ""
    sizes = ", ".join(f"{name} {n}" for name, n in splits.items())
    return (f"\n## Splits\n\n{sizes}. Records that are near-duplicates of each other, mutants of one seed kernel and "
            "kernels of one source file are always in the same split.\n")


def _tokens_section(tokens: dict | None) -> str:
    if not tokens:
        return ""
    try:
        from jit.code.analysis.token_stats import card_table
    except ImportError:
        return ""
    return "\n## Lengths in tokens\n\n" + card_table(tokens) + "\n"


def write_card(out: str, stats: dict, fmt: str, command: str, splits: list[str] | None = None) -> None:
    data_files = "\n".join(f'  - split: {name}\n    path: "data/{name}-*.{fmt}"' for name in (splits or ["train"]))
    cats = "\n".join(f"| {c} | {n} |" for c, n in sorted(stats.get("per_category", {}).items()))
    sources = _sources_section(stats)
    fields = ", ".join(f"`{f}`" for f in FIELDS)
    card = f"""---
configs:
- config_name: default
  data_files:
{data_files}
license: {_card_license(stats)}
task_categories:
- text-generation
tags:
- code
- cuda
- warp
size_categories:
- n<1M
---

# Warp kernel pairs

Python kernels written for NVIDIA Warp, each paired with the C++ (CPU) and CUDA C++ that Warp
{stats.get("warp_version", "")} generates for it, forward and backward (adjoint).
Made by `jit-synth` with:

    {command}

{stats.get("count", 0)} records in `data/`. Load with `datasets.load_dataset("path/to/this/folder")`.
{_near_duplicates_note(stats.get("near_duplicates"))}
## Fields

{fields}; optional `io` (an input/output example of a CPU run) and `cuda_ptx`.
`metadata` says where the kernel comes from (the seed and index that regenerate a synthetic
kernel; distribution, licence, file and line for real code), the Warp version, options,
builtins used and line counts; `validation` says how each side was checked.

{sources}
{_splits_note(stats.get("splits"))}{_tokens_section(stats.get("tokens"))}
## Realism

Measured against the kernels of Warp's own examples and tests (the half the generator never
reads): see `jit/benchmarks/realism.py` for the definitions.

{_realism_table(stats.get("realism") or {})}

## Categories

| category | records |
|---|---|
{cats}
"""
    write_atomic(os.path.join(out, "README.md"), card)


# ---------------------------------------------------------------------------------------------
# the merge's write stages: a part's kept records as pieces of shards, pieces joined into shards


def pieces_dir(out: str) -> str:
    return os.path.join(out, WORK, "merge", "pieces")


def piece_path(out: str, split: str, shard: int, part: int) -> str:
    return os.path.join(pieces_dir(out), f"{split}-{shard:05d}-{part:05d}.jsonl")


def write_pieces(out: str, part: int, dest: np.ndarray, placed: list[int], names: list[str], shard_size: int,
                 layout: str) -> int:
    """Copy part ``part``'s records to pieces: row ``r`` goes to split ``dest[r]`` (-1: dropped), the
    ``placed[s]``-th and later records of split ``s`` in order, ``shard_size`` a shard. Lines are
    copied as they are (a part's lines are the shards' lines). A marker named by ``layout`` makes a
    rerun skip the part; returns the records written."""
    marker = os.path.join(pieces_dir(out), f"part-{part:05d}.{layout}.done")
    if os.path.exists(marker):
        return int(np.count_nonzero(dest >= 0))
    os.makedirs(pieces_dir(out), exist_ok=True)
    chunks: dict[tuple[int, int], list[bytes]] = {}
    position = list(placed)
    with open(part_path(out, part), "rb") as f:
        for row, line in enumerate(f):
            s = int(dest[row])
            if s >= 0:
                chunks.setdefault((s, position[s] // shard_size), []).append(line)
                position[s] += 1
    for (s, shard), lines in chunks.items():
        path = piece_path(out, names[s], shard, part)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.writelines(lines)
        os.replace(tmp, path)
    write_atomic(marker, "")
    return sum(position) - sum(placed)


def assemble_shard(out: str, split: str, shard: int, n: int, fmt: str, parts: list[int]) -> str:
    """Shard ``shard`` of ``n`` of ``split``: its pieces joined in part order, then the pieces deleted.

    A shard whose pieces are gone was assembled by an earlier, interrupted run: it is kept."""
    path = os.path.join(out, "data", shard_name(shard, n, fmt, split))
    pieces = [piece_path(out, split, shard, p) for p in parts]
    if os.path.exists(path) and not any(os.path.exists(p) for p in pieces):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if fmt == "jsonl":
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            for piece in pieces:
                with open(piece, "rb") as g:
                    shutil.copyfileobj(g, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    else:
        records = []
        for piece in pieces:
            with open(piece, encoding="utf-8") as g:
                records += [json.loads(line) for line in g]
        write_parquet(path, records)
    for piece in pieces:
        os.remove(piece)
    return path
