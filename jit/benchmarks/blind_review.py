"""Blind review: can a Warp expert tell generated kernels from real ones, and would they train on them?

    python jit/benchmarks/blind_review.py sample DATASET --n 30 --seed 1 --out DIR
    python jit/benchmarks/blind_review.py score DIR alice.json bob.json

``sample`` draws N records of a generated dataset folder, stratified by ``metadata.source`` in
proportion to the dataset's mix, and N real kernels from the *measure* half of the reference
corpus (``reference``: the half the generator never reads, so no item is a mutant of another);
``--real non-test`` draws them from outside test files only (examples, library code).
A real kernel is eligible when the generator could have used it as a mutation seed: self-contained
and not generic; what a reviewer sees of it is its context (imports, constants, structs, helpers,
kernel), the same shape as a generated record's ``python_source``. Generated names lose their
8-hex item suffix, which exists only so many kernels can share one Warp module. The 2N items are
shuffled by the seed and written to ``DIR``:

    items.md      one section per item (``## item-01`` and a fenced Python block), nothing else
    items.jsonl   {"item": "item-01", "python_source": ...} per line, for scripted reviewers
    brief.md      the reviewers' brief (``blind_review_brief.md``)
    key.json      item -> origin (generated | real), source, record id or reference file and line

``score`` checks each answers file against the key (every item answered once, valid values;
otherwise exit 2 with one line) and reports, per reviewer and pooled over reviewers, for
generated and for real items: told apart (origin answered correctly), would train, at least
one defect; the same for generated items by source. It prints the table and writes
``DIR/scores.json``.

What it leaves out: asking the reviewers (people or models are given ``brief.md`` and the
items by whoever runs the benchmark), reading the defects' text (only whether there is one is
counted), and agreement between reviewers.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
from pathlib import Path

from jit.code.analysis import reference
from jit.code.engine.writers import read_dataset

ORIGINS = ("generated", "real")
FIGURES = ("told_apart", "would_train", "with_defect")
BRIEF = Path(__file__).with_name("blind_review_brief.md")
# an identifier ending in the generator's item suffix (``generator.item_hash``); the name must
# start with a letter or underscore, so a numeral such as ``1_00000000`` is left alone
_SUFFIXED = re.compile(r"\b([A-Za-z_]\w*?)_[0-9a-f]{8}\b")


class BlindReviewError(ValueError):
    """A dataset, sample folder or answers file the benchmark cannot use; the message says why."""


# ---------------------------------------------------------------------------------------------
# sample


def strip_suffixes(source: str) -> str:
    """``source`` with every name's 8-hex item suffix removed (kernel, helpers, structs)."""
    return _SUFFIXED.sub(r"\1", source)


def allocate(counts: dict[str, int], n: int) -> dict[str, int]:
    """``n`` draws split among sources in proportion to ``counts`` (largest remainder; ties go to
    the larger source, then by name, so the split is the same on every run)."""
    total = sum(counts.values())
    exact = {s: n * c / total for s, c in counts.items()}
    quota = {s: int(x) for s, x in exact.items()}
    by_remainder = sorted(counts, key=lambda s: (-(exact[s] - quota[s]), -counts[s], s))
    for s in by_remainder[: n - sum(quota.values())]:
        quota[s] += 1
    return {s: q for s, q in sorted(quota.items()) if q}


def draw_generated(records: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` records, stratified by ``metadata.source``; each stratum drawn by its own seeded random
    source, from its records in id order (so shard layout does not change the draw)."""
    if n > len(records):
        raise BlindReviewError(f"the dataset has {len(records)} records, fewer than --n {n}")
    strata: dict[str, list[dict]] = {}
    for r in records:
        strata.setdefault(source_of(r), []).append(r)
    drawn = []
    for source, k in allocate({s: len(rs) for s, rs in strata.items()}, n).items():
        pool = sorted(strata[source], key=lambda r: r["id"])
        drawn += random.Random(f"{seed}:generated:{source}").sample(pool, k)
    return drawn


def source_of(record: dict) -> str:
    return (record.get("metadata") or {}).get("source") or "unknown"


REAL_POOLS = ("all", "non-test")


def is_test_file(path: str) -> bool:
    return "/tests/" in f"/{path}" or Path(path).name.startswith("test_")


def real_pool(which: str = "all") -> list[reference.RealKernel]:
    """Measure-half kernels a reviewer can read alone, one per distinct context text.

    ``which="non-test"`` keeps only kernels outside test files (examples, library code): the real
    code that computes something, the genre the default mix is made of. Drawn from ``all``, the
    real half is mostly feature tests (639 of 711 eligible kernels of warp-lang 1.19), so a
    reviewer can tell the origins apart by genre alone.
    """
    if which not in REAL_POOLS:
        raise BlindReviewError(f"--real must be one of {', '.join(REAL_POOLS)}, not {which!r}")
    seen: dict[str, reference.RealKernel] = {}
    for k in reference.kernels("measure"):
        if k.self_contained and not k.generic and (which == "all" or not is_test_file(k.path)):
            seen.setdefault(k.context, k)
    return sorted(seen.values(), key=lambda k: (k.path, k.line))


def draw_real(n: int, seed: int, which: str = "all") -> list[reference.RealKernel]:
    pool = real_pool(which)
    if n > len(pool):
        raise BlindReviewError(f"the measure half has {len(pool)} eligible real kernels ({which}), "
                               f"fewer than --n {n}; lower --n")
    return random.Random(f"{seed}:real").sample(pool, n)


def make_items(records: list[dict], reals: list[reference.RealKernel], seed: int) -> list[tuple[str, dict]]:
    """(python source, key entry) per item, shuffled by the seed."""
    items = [(strip_suffixes(r["python_source"]),
              {"origin": "generated", "source": source_of(r), "record_id": r["id"],
               "kernel_name": strip_suffixes(r["kernel_name"]), "category": r.get("category")})
             for r in records]
    items += [(k.context, {"origin": "real", "source": "real", "file": k.path, "line": k.line, "kernel_name": k.name})
              for k in reals]
    random.Random(f"{seed}:order").shuffle(items)
    return items


def item_names(count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"item-{i:0{width}d}" for i in range(1, count + 1)]


def items_markdown(names: list[str], sources: list[str]) -> str:
    sections = []
    for name, text in zip(names, sources):
        fence = "````" if "```" in text else "```"  # a docstring quoting a fence must not end the block
        sections.append(f"## {name}\n\n{fence}python\n{text.rstrip()}\n{fence}\n")
    return "# Kernels for review\n\nThe brief (`brief.md`) says what to answer for each item.\n\n" + "\n".join(sections)


def sample(dataset: Path, n: int, seed: int, out: Path, real: str = "all") -> dict:
    """Write the items, the brief and the key of one blind review to ``out``; returns the key."""
    if n < 1:
        raise BlindReviewError(f"--n must be at least 1, not {n}")
    reals = draw_real(n, seed, real)  # a bad --real or --n fails before the dataset is read
    records = list(read_dataset(str(dataset)))
    if not records:
        raise BlindReviewError(f"{dataset} holds no dataset records (expected {dataset}/data/train-*.jsonl)")
    items = make_items(draw_generated(records, n, seed), reals, seed)
    names = item_names(len(items))
    mix: dict[str, int] = {}
    for r in records:
        mix[source_of(r)] = mix.get(source_of(r), 0) + 1
    key = {"dataset": str(dataset), "seed": seed, "n": n, "dataset_mix": dict(sorted(mix.items())),
           "reference": {**reference.distribution(), "half": "measure", "pool": real},
           "items": {name: entry for name, (_, entry) in zip(names, items)}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "items.md").write_text(items_markdown(names, [text for text, _ in items]), encoding="utf-8")
    (out / "items.jsonl").write_text("".join(json.dumps({"item": name, "python_source": text}) + "\n"
                                             for name, (text, _) in zip(names, items)), encoding="utf-8")
    shutil.copyfile(BRIEF, out / "brief.md")
    (out / "key.json").write_text(json.dumps(key, indent=2) + "\n", encoding="utf-8")
    (out / "scores.json").unlink(missing_ok=True)  # scores of an earlier sample no longer match the key
    return key


# ---------------------------------------------------------------------------------------------
# score


def read_key(folder: Path) -> dict[str, dict]:
    path = folder / "key.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))["items"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BlindReviewError(f"{path}: not a blind-review key ({exc})") from None


def read_answers(path: Path, key: dict[str, dict]) -> tuple[str, dict[str, dict]]:
    """(reviewer, item -> answer) of one answers file, every item of ``key`` answered once."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BlindReviewError(f"{path}: not readable JSON ({exc})") from None
    reviewer = path.stem
    if isinstance(data, dict):
        reviewer = data.get("reviewer") or reviewer
        data = data.get("answers")
    if not isinstance(data, list) or not isinstance(reviewer, str):
        raise BlindReviewError(f'{path}: expected a list of answers or {{"reviewer": "...", "answers": [...]}}')
    answers: dict[str, dict] = {}
    for position, answer in enumerate(data):
        try:
            item = check_answer(answer, position, key)
        except BlindReviewError as exc:
            raise BlindReviewError(f"{path}: {exc}") from None
        if item in answers:
            raise BlindReviewError(f"{path}: {item} is answered twice")
        answers[item] = answer
    missing = [item for item in key if item not in answers]
    if missing:
        raise BlindReviewError(f"{path}: {len(missing)} of {len(key)} items unanswered: {', '.join(missing[:5])}"
                               + (", ..." if len(missing) > 5 else ""))
    return reviewer, answers


def check_answer(answer, position: int, key: dict[str, dict]) -> str:
    """The item ``answer`` is about; raises (without the file name) when a value is wrong."""
    where = f"answer {position + 1}"
    if not isinstance(answer, dict):
        raise BlindReviewError(f"{where}: not a JSON object")
    item = answer.get("item")
    if item not in key:
        raise BlindReviewError(f"{where}: unknown item {item!r}")
    if answer.get("origin") not in ORIGINS:
        raise BlindReviewError(f'{item}: origin must be "generated" or "real", not {answer.get("origin")!r}')
    if not isinstance(answer.get("would_train"), bool):
        raise BlindReviewError(f"{item}: would_train must be true or false, not {answer.get('would_train')!r}")
    defects = answer.get("defects")
    if not isinstance(defects, list) or not all(isinstance(d, str) and d.strip() for d in defects):
        raise BlindReviewError(f"{item}: defects must be a list of non-empty strings, not {defects!r}")
    return item


def tally(pairs: list[tuple[dict, dict]]) -> dict[str, dict[str, int]]:
    """Count and total of each figure over (key entry, answer) pairs."""
    out = {f: {"count": 0, "total": len(pairs)} for f in FIGURES}
    for truth, answer in pairs:
        out["told_apart"]["count"] += answer["origin"] == truth["origin"]
        out["would_train"]["count"] += answer["would_train"]
        out["with_defect"]["count"] += bool(answer["defects"])
    return out


def figures(key: dict[str, dict], reviews: list[dict[str, dict]]) -> dict:
    """Figures for generated and real items, and for generated items by source, pooled over ``reviews``."""
    pairs = [(key[item], answer) for review in reviews for item, answer in sorted(review.items())]
    out: dict = {origin: tally([p for p in pairs if p[0]["origin"] == origin]) for origin in ORIGINS}
    sources = sorted({t["source"] for t, _ in pairs if t["origin"] == "generated"})
    out["generated_by_source"] = {
        s: tally([p for p in pairs if p[0]["origin"] == "generated" and p[0]["source"] == s]) for s in sources}
    return out


def score(folder: Path, answer_paths: list[Path]) -> dict:
    key = read_key(folder)
    reviews: dict[str, dict[str, dict]] = {}
    for path in answer_paths:
        reviewer, answers = read_answers(path, key)
        if reviewer in reviews:
            raise BlindReviewError(f"{path}: reviewer {reviewer!r} already answered in another file")
        reviews[reviewer] = answers
    result = {"items": {o: sum(e["origin"] == o for e in key.values()) for o in ORIGINS},
              "reviewers": {name: figures(key, [answers]) for name, answers in reviews.items()},
              "combined": figures(key, list(reviews.values()))}
    (folder / "scores.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def render(result: dict) -> str:
    header = f"{'':<24}{'told apart':>16}{'would train':>16}{'>=1 defect':>16}"
    lines = [f"items: {result['items']['generated']} generated, {result['items']['real']} real", ""]
    blocks = list(result["reviewers"].items())
    if len(blocks) > 1:
        blocks.append(("combined", result["combined"]))
    for name, figs in blocks:
        lines += [f"{name}", header]
        rows = [(origin, figs[origin]) for origin in ORIGINS]
        rows += [(f"  generated/{s}", t) for s, t in figs["generated_by_source"].items()]
        for label, t in rows:
            lines.append(f"{label:<24}" + "".join(f"{cell(t[f]):>16}" for f in FIGURES))
        lines.append("")
    return "\n".join(lines).rstrip()


def cell(figure: dict[str, int]) -> str:
    count, total = figure["count"], figure["total"]
    return f"{count}/{total} {count / total:4.0%}" if total else "-"


# ---------------------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="blind_review", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("sample", help="draw N generated and N real kernels into a review folder")
    s.add_argument("dataset", type=Path, help="a generated dataset folder (DIR/data/train-*.jsonl)")
    s.add_argument("--n", type=int, default=30, help="kernels of each origin (default 30)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, required=True, help="the review folder to write")
    s.add_argument("--real", choices=REAL_POOLS, default="all",
                   help="which real kernels to draw: all eligible ones of the measure half (mostly "
                        "feature tests), or non-test ones only (examples, library code)")
    c = commands.add_parser("score", help="score reviewers' answers against a review folder's key")
    c.add_argument("folder", type=Path, help="a folder written by `sample`")
    c.add_argument("answers", type=Path, nargs="+", help="one answers JSON file per reviewer")
    args = parser.parse_args(argv)

    try:
        if args.command == "sample":
            key = sample(args.dataset, args.n, args.seed, args.out, args.real)
            drawn: dict[str, int] = {}
            for entry in key["items"].values():
                if entry["origin"] == "generated":
                    drawn[entry["source"]] = drawn.get(entry["source"], 0) + 1
            print(f"wrote {len(key['items'])} items to {args.out} (seed {args.seed}): {args.n} generated ("
                  + ", ".join(f"{s} {k}" for s, k in sorted(drawn.items()))
                  + f"), {args.n} real ({args.real}) from the measure half of warp-lang "
                  + key["reference"]["version"])
        else:
            print(render(score(args.folder, args.answers)))
            print(f"\nwrote {args.folder / 'scores.json'}")
    except BlindReviewError as exc:
        print(f"blind_review: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
