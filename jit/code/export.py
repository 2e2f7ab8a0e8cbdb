"""Export a dataset as supervised fine-tuning examples: chat `messages`, one JSONL file per split.

Writes OUT/{split}.jsonl for every split of DIR (its shards DIR/data/{split}-NNNNN-of-NNNNN.*),
one example per line in the conversational format that TRL's SFTTrainer and `datasets` read:

  {"messages": [{"role": "system", "content": ...},
                {"role": "user", "content": <prompt with the kernel's code>},
                {"role": "assistant", "content": <the stored code, verbatim>}], "id": <record id>}

and OUT/export.json: the task, its template, the tokenizer, examples per split and dropped
records by reason. A task names the record fields on each side (--show-template prints them):

  py2cuda          Python kernel -> CUDA forward code, helper functions first
  py2cpp           Python kernel -> C++ (CPU) forward code, helper functions first
  py2cuda-adjoint  Python kernel -> CUDA backward (adjoint) code, helper functions first
  cuda2py          CUDA helpers and forward code -> the Python kernel
  py2ptx           Python kernel -> PTX of its forward and backward entries (datasets made with --emit-ptx)
  purpose2py       what the kernel is for (metadata.purpose) -> the Python kernel

Code sides are joined as `"\\n".join(parts)` of the non-blank fields, in the order shown: e.g.
the py2cuda answer is `cuda_functions + "\\n" + cuda_forward`, or `cuda_forward` alone when the
kernel has no helpers. Records lacking a required field are skipped and counted.

--max-tokens N drops examples whose conversation is longer than N tokens: the contents of its
turns, each encoded without special tokens -- or, with a transformers tokenizer that has a chat
template, the whole templated conversation. --tokenizer takes a tokenizer.json file, a local
folder or a hub name (needs: pip install 'warp-jit-synth[tokenizers]'); without one, tokens are
estimated (jit/code/analysis/token_stats.py: a few percent above a Qwen tokenizer's count).
--system TEXT replaces the system turn; --system '' leaves it out. --exclude PATH drops records
whose Python source nearly duplicates one in PATH (e.g. an evaluation set: a dataset folder, a
JSONL file or a folder of .py files), by the same test as `generate --exclude`.

examples:
  jit-synth export out/ds --task py2cuda --output out/sft
  jit-synth export out/ds --task py2cuda --output out/sft --max-tokens 4096 --tokenizer tokenizer.json
  jit-synth export out/ds --task cuda2py --output out/sft-rev --exclude my_eval_kernels/
  jit-synth export --show-template --task cuda2py
  jit-synth export --show-template                      # every task's template

What it leaves out: chat templates and tokenisation for training (the trainer does that).
"""

from __future__ import annotations

import collections
import json
import os
import re
from dataclasses import dataclass, field

from jit.code.engine import writers
from jit.code.analysis.token_stats import count_tokens

SYSTEM = "You are an expert in NVIDIA Warp and in the C++, CUDA and PTX code Warp generates from Python kernels."
HELPERS = ("cpu_functions", "cuda_functions")  # optional on either side: many kernels have none


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    prompt: tuple[str, ...]  # record fields shown in the user turn, as {code}
    answer: tuple[str, ...]  # record fields that make the assistant turn, verbatim
    user: str  # the user turn; {code} is the joined prompt fields
    hint: str  # how to make a dataset that has the required fields
    system: str = SYSTEM

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(f for f in (*self.prompt, *self.answer) if f not in HELPERS)


def _from_python(code: str, parts: str) -> str:
    return (f"Write the {code} that NVIDIA Warp generates for this Warp kernel: {parts}.\n\n"
            "```python\n{code}\n```")


_HELPERS_FIRST = "first the helper functions and structs it uses, then the kernel"

TASKS = {t.name: t for t in (
    Task("py2cuda", "Python kernel -> CUDA forward code, helper functions first",
         ("python_source",), ("cuda_functions", "cuda_forward"),
         _from_python("CUDA C++ forward code", _HELPERS_FIRST), "generate with --device cuda or both"),
    Task("py2cpp", "Python kernel -> C++ (CPU) forward code, helper functions first",
         ("python_source",), ("cpu_functions", "cpu_forward"),
         _from_python("C++ (CPU) forward code", _HELPERS_FIRST), "generate with --device cpu or both"),
    Task("py2cuda-adjoint", "Python kernel -> CUDA backward (adjoint) code, helper functions first",
         ("python_source",), ("cuda_functions", "cuda_backward"),
         _from_python("CUDA C++ backward (adjoint) code",
                      "first the helper functions and structs it uses with their adjoints, then the backward kernel"),
         "generate with --device cuda or both"),
    Task("cuda2py", "CUDA helpers and forward code -> the Python kernel",
         ("cuda_functions", "cuda_forward"), ("python_source",),
         "Write the NVIDIA Warp Python kernel from which Warp generated this CUDA C++ "
         "(helper functions and structs, then the forward kernel).\n\n```cuda\n{code}\n```",
         "generate with --device cuda or both"),
    Task("py2ptx", "Python kernel -> PTX of its forward and backward entries",
         ("python_source",), ("cuda_ptx",),
         _from_python("PTX", "the forward kernel entry, then the backward one if there is one"), "generate with --emit-ptx"),
    Task("purpose2py", "what a kernel is for -> the Python kernel (its helpers, structs and imports)",
         ("metadata.purpose",), ("python_source",),
         "Write an NVIDIA Warp kernel, with the imports, structs and @wp.func helpers it needs, that does this:\n\n"
         "{code}",
         "every generated record has a purpose; records of real code have one when the kernel has a docstring "
         "or a leading comment"),
)}


class ExportError(Exception):
    """A dataset or option that cannot be exported, with the reason and how to fix it."""


def value(record: dict, name: str) -> str:
    """A record's field, or a metadata entry named ``metadata.<key>`` (``metadata.purpose``)."""
    if name.startswith("metadata."):
        return str((record.get("metadata") or {}).get(name.split(".", 1)[1]) or "")
    return record.get(name) or ""


def compose(record: dict, fields: tuple[str, ...]) -> str:
    """The non-blank fields of ``record``, verbatim, joined by one newline."""
    return "\n".join(value(record, f) for f in fields if value(record, f).strip())


def missing(task: Task, record: dict) -> str | None:
    """The first required field ``record`` lacks, or None."""
    return next((f for f in task.required if not value(record, f).strip()), None)


def messages(task: Task, record: dict, system: str | None = None) -> list[dict]:
    """The conversation of one record; ``system`` replaces the task's system text ("" drops the turn)."""
    system = task.system if system is None else system
    turns = [{"role": "system", "content": system}] if system else []
    return turns + [{"role": "user", "content": task.user.replace("{code}", compose(record, task.prompt))},
                    {"role": "assistant", "content": compose(record, task.answer)}]


def template(task: Task, system: str | None = None) -> str:
    """The task's turns with placeholders, as --show-template prints it."""
    def joined(fields):
        return " + '\\n' + ".join("{" + f + "}" for f in fields)

    system = task.system if system is None else system
    return "\n".join([
        f"task: {task.name} ({task.description})",
        f"required fields: {', '.join(task.required)} (records without them are skipped)",
        "code sides join the non-blank fields with one newline; a blank helper field is left out with its newline",
        "", "--- system ---", system or "(no system turn)",
        "", "--- user ---", task.user.replace("{code}", joined(task.prompt)),
        "", "--- assistant ---", joined(task.answer), ""])


# ---------------------------------------------------------------------------------------------
# token counts


class Estimate:
    """Token counts without a tokenizer: ``token_stats.count_tokens`` of every turn."""

    name = "estimate (jit.code.analysis.token_stats.count_tokens)"

    def length(self, turns: list[dict]) -> int:
        return sum(count_tokens(t["content"]) for t in turns)


class Encoder:
    """Token counts of a ``tokenizers.Tokenizer`` or a transformers tokenizer."""

    def __init__(self, tokenizer, name: str):
        self.tokenizer, self.name = tokenizer, name
        self.chat = bool(getattr(tokenizer, "chat_template", None))

    def length(self, turns: list[dict]) -> int:
        if self.chat:
            ids = self.tokenizer.apply_chat_template(turns, tokenize=True)
            return len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        return sum(len(self._encode(t["content"])) for t in turns)

    def _encode(self, text: str) -> list[int]:
        if hasattr(self.tokenizer, "encode_batch"):  # a tokenizers.Tokenizer
            return self.tokenizer.encode(text, add_special_tokens=False).ids
        return self.tokenizer.encode(text, add_special_tokens=False)


def load_tokenizer(name: str) -> Encoder:
    """A tokenizer.json file (``tokenizers``), or a folder or hub name (``transformers``, else ``tokenizers``)."""
    try:
        import transformers
    except ImportError:
        transformers = None
    try:
        import tokenizers
    except ImportError:
        tokenizers = None
    if transformers is None and tokenizers is None:
        raise ExportError("--tokenizer needs the tokenizers or transformers library: pip install 'warp-jit-synth[tokenizers]'")
    try:
        if os.path.isfile(name) and tokenizers is not None:
            return Encoder(tokenizers.Tokenizer.from_file(name), f"tokenizers: {name}")
        if transformers is not None:
            return Encoder(transformers.AutoTokenizer.from_pretrained(name), f"transformers: {name}")
        if os.path.isdir(name):
            return Encoder(tokenizers.Tokenizer.from_file(os.path.join(name, "tokenizer.json")), f"tokenizers: {name}")
        return Encoder(tokenizers.Tokenizer.from_pretrained(name), f"tokenizers: {name}")
    except Exception as exc:  # the libraries raise many kinds: missing file, bad JSON, no network
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExportError(f"--tokenizer {name}: cannot load it ({first}); give a tokenizer.json file, "
                          "a folder with one, or a model name the hub can serve") from None


# ---------------------------------------------------------------------------------------------
# the export

_SHARD = re.compile(r"^(?P<split>.+)-\d{5}-of-\d{5}\.(?:jsonl|parquet)$")
SPLIT_ORDER = ("train", "validation", "test")


def dataset_splits(folder: str) -> dict[str, list[str]]:
    """{split: shard paths} from the shard names in ``folder``/data, train, validation, test first."""
    data = os.path.join(folder, "data")
    names = sorted(os.listdir(data)) if os.path.isdir(data) else []
    splits: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        match = _SHARD.match(name)
        if match:
            splits[match["split"]].append(os.path.join(data, name))
    order = [s for s in SPLIT_ORDER if s in splits] + sorted(s for s in splits if s not in SPLIT_ORDER)
    return {s: splits[s] for s in order}


def _records(paths: list[str]):
    for path in paths:
        for line, record, error in writers.read_records(path):
            if error:
                raise ExportError(f"{path}:{line}: {error}")
            yield record


def drop_reason(task: Task, record: dict, filters=()) -> str | None:
    """Why ``record`` is dropped before its length is known (None: it is kept).

    ``filters`` are callables ``record -> reason | None`` (e.g. an exclusion set), applied in order.
    """
    lacking = missing(task, record)
    if lacking:
        return f"missing_{lacking}"
    return next((reason for f in filters if (reason := f(record))), None)


@dataclass
class Tally:
    examples: dict = field(default_factory=dict)  # split -> examples written
    dropped: collections.Counter = field(default_factory=collections.Counter)  # reason -> records
    shortest_too_long: int | None = None  # tokens of the shortest example over --max-tokens


def conversations(task: Task, records, tally: Tally, *, system=None, max_tokens=None, counter=None, filters=()):
    """The conversations of ``records`` that are kept; the others are counted in ``tally.dropped``."""
    for record in records:
        reason = drop_reason(task, record, filters)
        if reason:
            tally.dropped[reason] += 1
            continue
        turns = messages(task, record, system)
        if max_tokens is not None:
            length = counter.length(turns)
            if length > max_tokens:
                tally.dropped["too_long"] += 1
                tally.shortest_too_long = min(length, tally.shortest_too_long or length)
                continue
        yield record, turns


def export(folder: str, task: Task, out: str, *, max_tokens: int | None = None, counter=None,
           system: str | None = None, exclusions=None) -> dict:
    """Write OUT/{split}.jsonl and OUT/export.json; return the summary that export.json holds.

    ``exclusions`` (``exclude.load_exclusions``) drops records near an evaluation set. Every file
    is written under a temporary name and renamed once all splits are complete; on an error,
    nothing is left in OUT.
    """
    splits = dataset_splits(folder)
    if not splits:
        raise ExportError(f"no records: no shards {folder}/data/{{split}}-NNNNN-of-NNNNN.jsonl or .parquet")
    counter = counter or Estimate()
    options = {"system": system, "max_tokens": max_tokens, "counter": counter,
               "filters": [excluded(exclusions)] if exclusions is not None else []}
    created = not os.path.isdir(out)
    os.makedirs(out, exist_ok=True)
    tally = Tally()
    tmp = {split: os.path.join(out, f"{split}.jsonl.tmp-{os.getpid()}") for split in splits}
    try:
        for split, paths in splits.items():
            tally.examples[split] = 0
            with open(tmp[split], "w", encoding="utf-8") as f:
                for record, turns in conversations(task, _records(paths), tally, **options):
                    f.write(writers.dumps({"messages": turns, "id": record.get("id")}) + "\n")
                    tally.examples[split] += 1
        if not sum(tally.examples.values()):
            raise ExportError(_nothing_kept(task, tally, max_tokens))
        for split in splits:
            os.replace(tmp[split], os.path.join(out, f"{split}.jsonl"))
    except BaseException:
        for path in tmp.values():
            if os.path.exists(path):
                os.remove(path)
        if created:
            os.rmdir(out)
        raise
    summary = {"dataset": os.path.abspath(folder), "task": task.name, "template": template(task, system),
               "tokenizer": counter.name if max_tokens is not None else None, "max_tokens": max_tokens,
               "exclude": exclusions.describe() if exclusions is not None else None,
               "examples": tally.examples, "dropped": dict(sorted(tally.dropped.items())),
               "files": {split: f"{split}.jsonl" for split in splits}}
    _remove_stale(out, splits)
    writers.write_json(os.path.join(out, "export.json"), summary)
    return summary


def excluded(exclusions):
    """A filter: "excluded" for a record whose Python source is near one of ``exclusions``."""
    def check(record: dict) -> str | None:
        return "excluded" if exclusions.matches(record.get("python_source") or "") else None
    return check


def _nothing_kept(task: Task, tally: Tally, max_tokens: int | None) -> str:
    if not tally.dropped:
        return "the dataset's shards hold no records"
    fields = [r.removeprefix("missing_") for r in tally.dropped if r.startswith("missing_")]
    if fields and len(fields) == len(tally.dropped):
        return f"no record has {' and '.join(fields)}, which task {task.name} needs; {task.hint}"
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(tally.dropped.items()))
    if tally.shortest_too_long is not None:
        return (f"every record was dropped ({reasons}); the shortest example has {tally.shortest_too_long} "
                f"tokens: raise --max-tokens {max_tokens}")
    return f"every record was dropped ({reasons})"


def _remove_stale(out: str, splits: dict) -> None:
    """Split files an earlier export to OUT wrote and this one did not (it lists them in export.json)."""
    try:
        with open(os.path.join(out, "export.json"), encoding="utf-8") as f:
            earlier = json.load(f).get("files", {})
    except (OSError, ValueError, AttributeError):
        return
    for split, name in earlier.items():
        path = os.path.join(out, os.path.basename(name))
        if split not in splits and os.path.exists(path):
            os.remove(path)


# ---------------------------------------------------------------------------------------------
# command line


def load_exclusions(path: str):
    from jit.code.engine import exclude

    try:
        return exclude.load_exclusions(path)
    except ValueError as exc:
        raise ExportError(f"--exclude {path}: {exc}") from None
