"""A benchmark: real kernels with recorded inputs and outputs, by tier, in a dataset folder.

``build(records, out, ...)`` takes records of real code (what ``extract`` or ``trace`` wrote)
whose ``metadata["launch"]`` says how to run them (the caller infers it from the code), runs
each on the CPU with inputs drawn from the benchmark seed and the record id (the ``execute``
check: outputs finite and bitwise repeatable, gradients checked where the kernel is
differentiable), keeps those that ran with an ``io`` example, drops near-duplicates of
training sets (``engine.exclude``), and writes ``out/data/test-*.jsonl``, ``out/bench.json``
and the card ``out/README.md``. ``export`` reads the folder as it reads any dataset, and ids are
the records' content ids, so an exported test split's ids are the benchmark's.

A benchmark record is a dataset record with ``metadata["bench"]``: its tier, the features the
tier comes from, the tasks it can be asked (``export.TASKS`` whose fields it has) and the wider
launches its kernel runs (``variants``: inputs that reach the code its own launch leaves alone).
What it leaves out: finding the kernels and their launches (``commands.bench``), scoring (``score``).
"""

from __future__ import annotations

import collections
import hashlib
import os
from types import SimpleNamespace

from jit.code import export
from jit.code.engine import writers
from jit.code.evaluation import running, tiers, variants
from jit.code.records import FIELDS, Pair

BENCH_FILE = "bench.json"
SPLIT = "test"
BATCH = 32
BENCH_VERSION = 2  # 2: metadata.bench.launches


class BenchError(Exception):
    """A folder that is not a benchmark, with what to do about it."""


def tasks_of(record: dict) -> list[str]:
    """The export tasks a record can be asked: those whose required fields it has."""
    return [name for name, task in export.TASKS.items() if all(export.value(record, f) for f in task.required)]


def item_index(record_id: str) -> int:
    """The input stream of a record: from its id, so the same kernel draws the same inputs anywhere."""
    return int(hashlib.sha256(record_id.encode()).hexdigest()[:12], 16)


def attach_io(records: list[dict], seed: int, backward: bool = True) -> tuple[list[dict], collections.Counter]:
    """Run each record's kernel (rebuilt from its text) on the CPU with its ``metadata["launch"]``;
    (the records that ran, with ``io`` and validation, in the order given; rejects by reason)."""
    from jit.code.checks import execute
    from jit.code.checks.rebuild import batches
    from jit.code.extraction import warp_backend as wb

    wb.init()
    wb.silence_performance_notes()
    rejects: collections.Counter = collections.Counter()
    done: dict[str, dict] = {}
    run = SimpleNamespace(backward=backward, devices=("cpu",))
    for n, group in enumerate(batches(records, BATCH)):
        pairs = {}
        for r in group:
            meta = dict(r.get("metadata") or {}, seed=seed, index=item_index(r["id"]), attempt=0)
            pairs[r["id"]] = Pair(**{k: r.get(k) for k in FIELDS}, io=None, cuda_ptx=r.get("cuda_ptx"))
            pairs[r["id"]].metadata = meta
        try:
            handle = wb.define([r["python_source"] for r in group], f"jit_bench_{n}_{os.getpid()}")
        except Exception as exc:
            if len(group) > 1:  # one bad text: the others on their own
                for r in group:
                    ran, why = attach_io([r], seed, backward)
                    done.update({x["id"]: x for x in ran})
                    rejects.update(why)
            else:
                rejects[f"define failed: {type(exc).__name__}"] += 1
            continue
        try:
            live = {r["id"]: handle.namespace.get(r["kernel_name"]) for r in group}
            items = [execute.Item.of(key, pairs[key]) for key in live if wb.is_kernel(live[key])]
            if len(items) < len(group):
                rejects["python_source does not define kernel_name"] += len(group) - len(items)
            failed = execute.execute_batch(run, items, {i.name: live[i.name] for i in items}, pairs)
        finally:
            handle.release()
        for item in items:
            pair = pairs[item.name]
            if item.name in failed:
                rejects[failed[item.name]] += 1
            elif pair.io is None:
                rejects[pair.validation.get("cpu_reason") or "io example too large"] += 1
            elif unchanged(pair.io):
                rejects["outputs unchanged by the launch"] += 1
            elif "struct " in (pair.cpu_functions or "") + (pair.cuda_functions or "") and \
                    (why := running.struct_code_differs(pair.to_dict())):
                rejects[why.split(" of struct")[0] + " of a struct differs from what Warp compiles"] += 1
            else:
                done[item.name] = pair.to_dict()
    return [done[r["id"]] for r in records if r["id"] in done], rejects


def unchanged(io: dict) -> bool:
    """True when every output holds what it held before the launch: such an example cannot tell
    a kernel from one that writes nothing (a guard that no recorded input passes, say)."""
    return all(io["outputs"][name]["data"] == io["inputs"][name]["data"] for name in io["outputs"])


def mark(record: dict) -> dict:
    """The record with ``metadata["bench"]``: tier, features, tasks."""
    feats = tiers.features(record["python_source"])
    meta = dict(record.get("metadata") or {})
    meta["bench"] = {**(meta.get("bench") or {}), "tier": tiers.tier(feats), "features": feats,
                     "score": tiers.score(feats), "tasks": tasks_of(record)}
    return dict(record, metadata=meta)


def exclude(records: list[dict], paths: list[str]) -> tuple[list[dict], dict[str, int]]:
    """The records not near-duplicating a source of any training set in ``paths``; dropped per path."""
    from jit.code.engine import exclude as exclusion

    dropped = {}
    for path in paths:
        sources = exclusion.load_exclusions(path)
        kept = [r for r in records if not sources.matches(r["python_source"])]
        dropped[path] = len(records) - len(kept)
        records = kept
    return records, dropped


def build(records: list[dict], out: str, seed: int = 0, excludes: list[str] = (), provenance: dict | None = None,
          backward: bool = True) -> dict:
    """Write the benchmark of ``records`` (each with a launch) to ``out``; returns ``bench.json``'s content."""
    records, dropped = exclude(sorted(records, key=lambda r: r["id"]), list(excludes))
    ran, rejects = attach_io(records, seed, backward)
    marked = [mark(r) for r in variants.exercised(ran)]
    marked.sort(key=lambda r: (tiers.TIERS.index(r["metadata"]["bench"]["tier"]), r["id"]))
    os.makedirs(out, exist_ok=True)
    writers.write_shards(out, marked, len(marked), max(1, len(marked)), "jsonl", split=SPLIT)
    info = summary(marked, seed, provenance or {}, dropped, rejects, len(records))
    writers.write_json(os.path.join(out, BENCH_FILE), info)
    writers.write_atomic(os.path.join(out, "README.md"), card(info))
    return info


def summary(records: list[dict], seed: int, provenance: dict, dropped: dict, rejects, candidates: int) -> dict:
    by_tier = collections.Counter(r["metadata"]["bench"]["tier"] for r in records)
    per_task = {task: collections.Counter() for task in export.TASKS}
    for r in records:
        for task in r["metadata"]["bench"]["tasks"]:
            per_task[task][r["metadata"]["bench"]["tier"]] += 1
    return {
        "bench_version": BENCH_VERSION, "seed": seed, "count": len(records),
        "tiers": {t: by_tier.get(t, 0) for t in tiers.TIERS},
        "tasks": {task: {t: c.get(t, 0) for t in tiers.TIERS} for task, c in per_task.items()},
        "tier_rule": {"weights": tiers.WEIGHTS, "easy_below": tiers.EASY_BELOW, "hard_from": tiers.HARD_FROM},
        "candidates": candidates, "excluded": dropped, "rejects": dict(sorted(rejects.items())),
        "gradients": sum(1 for r in records if (r.get("validation") or {}).get("gradient") == "passed"),
        **provenance,
    }


def card(info: dict) -> str:
    rows = ["| task | " + " | ".join(tiers.TIERS) + " | total |", "|---" * (len(tiers.TIERS) + 2) + "|"]
    for task, counts in info["tasks"].items():
        rows.append(f"| {task} | " + " | ".join(str(counts[t]) for t in tiers.TIERS) + f" | {sum(counts.values())} |")
    tier_line = ", ".join(f"{info['tiers'][t]} {t}" for t in tiers.TIERS)
    excluded = "".join(f"\n- {n} near-duplicates of `{p}` dropped" for p, n in info["excluded"].items())
    rejects = ", ".join(f"{why}: {n}" for why, n in info["rejects"].items()) or "none"
    return f"""---
configs:
- config_name: default
  data_files:
  - split: {SPLIT}
    path: data/{SPLIT}-*.jsonl
---
# Warp kernel translation benchmark

{info['count']} real Warp kernels ({tier_line}), each rebuilt alone from its Python text and run
on the CPU with recorded inputs and outputs (`io`); {info['gradients']} also passed a gradient check.
Source: {info.get('source', 'unknown')}. Seed of the recorded inputs: {info['seed']}.

Score a model with `jit-synth eval PREDICTIONS --bench THIS_FOLDER --task TASK`.

Kernels per task and tier (a task needs the record's fields: `cuda_ptx` only with `--emit-ptx`,
`metadata.purpose` when the kernel says what it does):

{chr(10).join(rows)}

Tiers weigh code lines, loops, structs, `@wp.func` helpers, tile builtins and spatial queries
(weights {info['tier_rule']['weights']}): easy below {info['tier_rule']['easy_below']}, hard from
{info['tier_rule']['hard_from']}.

Of {info['candidates']} candidate kernels, left out: {rejects}.{excluded}
"""


def read(folder: str) -> tuple[dict, dict[str, dict]]:
    """(bench.json, records by id) of a benchmark folder; BenchError when it is not one."""
    info_path = os.path.join(folder, BENCH_FILE)
    if not os.path.isfile(info_path):
        raise BenchError(f"--bench {folder}: no {BENCH_FILE} there; make one with jit-synth bench build --output {folder}")
    import json

    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    records = {r["id"]: r for path in writers.data_files(folder, SPLIT)
               for _, r, _ in writers.read_records(path) if r is not None}
    return info, records
