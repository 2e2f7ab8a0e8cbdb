"""How the merge scales: a cheap source with planted near-duplicates, through the whole engine.

The source (``ScaleSource``) makes item ``i`` of a run from ``random.Random(f"{seed}:{i}")``, with no
Warp: a small kernel of 8 to 16 statements and made-up generated code. Of the items,

- ``COPY`` (1%) repeat an earlier item's kernel under another name: the same content id;
- ``NEAR`` (4%) are an earlier item with its locals renamed and its constants changed (normalised
  tokens identical, Jaccard 1.0), and ``EDITED`` (1%) an earlier item with one statement appended
  (Jaccard about 0.9 to 0.95); the earlier item is any item before, so most are in other parts, and it
  can be a planted copy itself (chains);
- ``FAMILY`` (30%) belong to one of ``count / 30`` families: a family's twelve statements with three
  of them drawn again, like mutants of one seed kernel (similar, rarely near-duplicates); a family
  shares a seed kernel, so its members share a split;
- the rest are kernels of their own.

A record's id is a hash of its statements (a copy has its original's id), not ``records.content_id``,
which parses the text and would make most of this source's cost. Workers write each part's MinHash
signatures, as the generator's do. The run keeps near-duplicate
control (0.9) and three splits, as ``generate --splits train=0.9,validation=0.05,test=0.05`` would.
The engine runs in a child process whose process tree is sampled (``memory.py``: summed PSS, the
driver's PSS); stats.json gives each merge stage's wall time. Afterwards the output is read back:
a planted near-duplicate is found when it is not in the dataset, and items dropped that were not
planted are counted.

    python jit/benchmarks/scale.py --count 10000 --workers 2 --output /tmp/scale10k
    python jit/benchmarks/scale.py --count 100000 --executor ray --output /tmp/scale100k --json s.json

What it leaves out: Warp (no code is generated), and validation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import keyword
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from jit.benchmarks.memory import sample_tree
from jit.code.analysis.tokens import jaccard, shingles
from jit.code.engine import dedup, writers
from jit.code.engine.plan import PartStats
from jit.code.engine.source import Source
from jit.code.records import Pair

COPY, NEAR, EDITED, FAMILY = 0.01, 0.04, 0.01, 0.30
FAMILY_SIZE = 30
FUNCS = ["sin", "cos", "tan", "sqrt", "cbrt", "abs", "exp", "exp2", "log", "log2", "log10", "floor", "ceil", "trunc",
         "round", "rint", "frac", "tanh", "sinh", "cosh", "atan", "asin", "acos", "sign", "erf", "erfc", "degrees",
         "radians", "nonzero", "isfinite"]
PAIRS = ["min", "max", "atan2", "pow", "step", "mod"]
OPS = ["+", "-", "*", "/"]
FORMS = [
    "v{k} = wp.{f}(a[i]) {o} {c}",
    "v{k} = wp.{f}(v{p} {o} b[i])",
    "v{k} = wp.{h}(v{p}, wp.{g}(a[i]))",
    "v{k} = wp.{f}(a[i]) {o} (1.0 + wp.abs(wp.{g}(v{p})))",
    "v{k} = wp.clamp(wp.{f}(v{p}), -{c}, {c})",
    "v{k} = v{p} {o} {c} {q} wp.{f}(b[i])",
    "if v{p} > {c}:\n        v{k} = wp.{f}(b[i])\n    else:\n        v{k} = wp.{g}(v{p}) {o} a[i]",
    "v{k} = wp.{h}(wp.{f}(b[i]), {c}) {o} v{p}",
    "for j in range({n}):\n        v{k} = v{k} {o} wp.{f}(a[j] {q} v{p})",
    "wp.atomic_add(out, i, wp.{f}(v{p}) {o} wp.{g}(b[i]))",
]
SPLITS = (("train", 0.9), ("validation", 0.05), ("test", 0.05))


def statement(rng: random.Random, k: int) -> str:
    return rng.choice(FORMS).format(k=k, p=rng.randrange(k) if k else "0", f=rng.choice(FUNCS), g=rng.choice(FUNCS),
                                    h=rng.choice(PAIRS), o=rng.choice(OPS), q=rng.choice(OPS),
                                    c=round(rng.uniform(0.5, 9.5), 2), n=rng.randint(2, 9))


def family_body(seed: int, family: int) -> list[str]:
    rng = random.Random(f"{seed}:family:{family}")
    return [statement(rng, k) for k in range(12)]


@dataclass(frozen=True, slots=True)
class Item:
    body: tuple[str, ...]
    kind: str  # "own", "family", "copy", "near", "edited"
    of: int = -1  # the earlier item a planted one repeats
    family: int = -1


def item(seed: int, i: int, count: int) -> Item:
    rng = random.Random(f"{seed}:{i}")
    r = rng.random()
    if i and r < COPY + NEAR + EDITED:
        j = rng.randrange(i)
        base = item(seed, j, count).body
        if r < COPY:
            return Item(base, "copy", j)
        if r < COPY + NEAR:
            renamed = (line.replace("v", "t") for line in base)  # no builtin or keyword here has a "v"
            return Item(tuple(re.sub(r"\d+\.\d+", lambda m: f"{rng.uniform(0.5, 9.5):.2f}", line) for line in renamed),
                        "near", j)
        return Item(base + (statement(rng, len(base)),), "edited", j)
    if r < COPY + NEAR + EDITED + FAMILY:
        family = rng.randrange(max(1, count // FAMILY_SIZE))
        body = list(family_body(seed, family))
        for k in rng.sample(range(len(body)), 3):
            body[k] = statement(rng, k)
        return Item(tuple(body), "family", family=family)
    return Item(tuple(statement(rng, k) for k in range(rng.randint(8, 16))), "own")


def kernel(name: str, body: tuple[str, ...]) -> str:
    var = "t" if body and body[0].startswith("t") else "v"
    total = " + ".join(f"{var}{k}" for k in range(len(body)))
    return ("import warp as wp\n\n\n@wp.kernel\n"
            f"def {name}(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):\n"
            "    i = wp.tid()\n" + "".join(f"    {line}\n" for line in body) + f"    out[i] = {total}\n")


@dataclass(frozen=True)
class ScaleSource(Source):
    """Cheap records with planted duplicates and families (see the module docstring)."""

    items: int
    seed: int = 0
    name = "scale"

    def identity(self) -> dict:
        return {"scale_items": self.items, "seed": self.seed}

    def size(self, run) -> int:
        return self.items

    def describe(self) -> dict:
        return {"seed": self.seed}

    def run_part(self, run, part, progress=None):
        stats = PartStats(part.number, part.start, part.stop)
        out = writers.PartWriter(run.out, part.number)
        seen = set()
        for i in range(part.start, part.stop):
            it = item(self.seed, i, self.items)
            source = kernel(f"k{i}", it.body)
            cid = hashlib.sha256("\n".join(it.body).encode("utf-8")).hexdigest()[:20]  # content_id parses: too dear here
            if cid in seen:  # a part keeps one copy of an id, as the generator's parts do
                stats.rejects["duplicate"] += 1
                continue
            seen.add(cid)
            meta = {"source": it.kind, "index": i, "builtins": sorted(set(re.findall(r"wp\.(\w+)\(", source))),
                    "python_lines": source.count("\n")}
            if it.kind == "family":
                meta["seed_kernel"] = {"distribution": "scale", "file": f"family{it.family}.py", "name": f"f{it.family}"}
            code = "".join(f"  // {line.strip()}\n  float r{k} = 0.0f;\n" for k, line in enumerate(it.body))
            pair = Pair(id=cid, kernel_name=f"k{i}", category=it.kind, python_source=source,
                        cpu_forward=f"void k{i}_cpu_kernel_forward() {{\n{code}}}\n", validation={"cpu": "generated"},
                        metadata=meta)
            sig, hashes = fingerprint(source)
            out.add(i, pair.to_dict(), sig.hashvalues, hashes)
        stats.records = len(out)
        out.finish(stats.to_dict())
        if progress is not None:
            progress.put((stats.records, sum(stats.rejects.values())))
        return stats


_NAME = re.compile(r"[A-Za-z_]\w*|\d+\.\d+|\d+|[-+*/()\[\],:.=<>@]")


def norm_tokens(text: str) -> list[str]:
    """``analysis.tokens.norm_tokens`` for this source's kernels only, by a regular expression:
    Python's tokenizer is most of a signature's cost (``check_tokens`` compares the two)."""
    out = []
    for tok in _NAME.findall(text):
        if tok[0].isdigit():
            out.append("NUM")
        elif tok[0].isalpha() or tok[0] == "_":
            keep = tok == "wp" or keyword.iskeyword(tok) or (len(out) >= 2 and out[-1] == "." and out[-2] == "wp")
            out.append(tok if keep else "ID")
        else:
            out.append(tok)
    return out


def fingerprint(text: str):
    """``dedup.fingerprint(text)`` (signature, shingle hashes), with the faster tokenizer."""
    from datasketch import LeanMinHash

    encoded = [s.encode("utf-8") for s in shingles(norm_tokens(text), dedup.SHINGLE)]
    minhash = dedup._blank().copy()
    minhash.update_batch(encoded)
    return LeanMinHash(minhash), dedup._hashes(encoded)


def check_tokens(seed: int, count: int, items: int = 300) -> None:
    from jit.code.analysis.tokens import norm_tokens as reference

    for i in range(min(items, count)):
        text = kernel(f"k{i}", item(seed, i, count).body)
        if norm_tokens(text) != reference(text):
            raise AssertionError(f"the fast tokenizer reads item {i} differently:\n{text}")


# ---------------------------------------------------------------------------------------------
# the run (child process) and its measurement (parent)


def child(args) -> int:
    from jit.code.engine import run as engine

    run = engine.RunSpec(out=args.output, source=ScaleSource(args.count, args.seed), devices=("cpu",),
                         validate="none", checks=(), shard_size=args.shard_size, near_dup_threshold=0.9,
                         splits=SPLITS)
    engine.prepare_output(run, resume=args.resume, overwrite=False)
    engine.build_dataset(run, args.workers, quiet=True, executor=args.executor)
    return 0


def check(out: str, count: int, seed: int) -> dict:
    """Planted near-duplicates found (not in the dataset), and unplanted items dropped."""
    kept = {r["metadata"]["index"] for r in writers.read_dataset(out)}
    planted = {"copy": [0, 0], "near": [0, 0], "edited, Jaccard >= 0.9": [0, 0], "edited, Jaccard < 0.9": [0, 0]}
    unplanted_dropped = {"own": 0, "family": 0}
    for i in range(count):
        it = item(seed, i, count)
        kind = it.kind
        if kind == "edited":
            similar = jaccard(dedup.shingle_set(kernel("a", it.body)), dedup.shingle_set(kernel("b", item(seed, it.of, count).body)))
            kind = "edited, Jaccard >= 0.9" if similar >= 0.9 else "edited, Jaccard < 0.9"
        if kind in planted:
            planted[kind][0] += 1
            planted[kind][1] += i not in kept
        elif i not in kept:
            unplanted_dropped[it.kind] += 1
    return {"planted": {k: {"items": n, "found": f} for k, (n, f) in planted.items()},
            "unplanted_dropped": unplanted_dropped, "kept": len(kept)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--executor", choices=("local", "ray"), default="local")
    p.add_argument("--shard-size", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", required=True)
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.output = os.path.abspath(args.output)
    if args.child:
        return child(args)
    check_tokens(args.seed, args.count)
    if os.path.exists(args.output):
        shutil.rmtree(args.output)
    command = [sys.executable, os.path.abspath(__file__), "--child", *(argv if argv is not None else sys.argv[1:])]
    t0 = time.perf_counter()
    memory = sample_tree(subprocess.Popen(command))
    seconds = time.perf_counter() - t0
    if memory.returncode:
        print(f"the run failed (exit {memory.returncode})", file=sys.stderr)
        return 1
    stats = writers.read_stats(args.output)
    stages = stats.get("merge_seconds", {})  # the single-process merge before the stages had none
    merge = sum(v for k, v in stages.items() if k not in ("counts", "stats")) or float("nan")  # stats holds counts
    figures = {
        "count": args.count, "workers": args.workers, "executor": args.executor, "seconds": round(seconds, 1),
        "parts_seconds": round(stats["seconds"] - merge, 1), "merge_stages": stages, "merge_seconds": round(merge, 1),
        "records_per_second": round(args.count / seconds, 1), "merge_records_per_second": round(args.count / merge, 1),
        "peak_pss_mib": memory.peak_pss, "driver_peak_pss_mib": memory.driver_peak_pss,
        "worker_peak_pss_mib": memory.worker_peak_pss, "records": stats["count"], "splits": stats["splits"],
        "rejects": stats["rejects"], "buckets": stats.get("merge"), **check(args.output, args.count, args.seed),
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
