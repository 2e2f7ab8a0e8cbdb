"""Baselines: predictions made without a model, for the floor and the ceiling of a score.

``oracle``: Warp's own output for the task (the benchmark's reference text). It must score 100%
on every measure; anything less is a fault of the harness, not of a model.

``retrieval``: for each benchmark record, the training record whose prompt is nearest by the
Jaccard similarity of normalised-token 4-gram sets (the prompt side of the task: Python for the
py2* tasks, CUDA for cuda2py, the purpose for purpose2py), and that record's answer with its
names mapped to the benchmark kernel's: the kernel name and, position by position, its
parameters (``x`` and Warp's ``var_x`` alike). It is the score of looking things up in the
training set: a floor any trained model should beat, and a measure of how well the training set
covers the benchmark. What it leaves out: scoring (``score``).
"""

from __future__ import annotations

import ast
import re

from jit.code import export
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles

BASELINES = ("oracle", "retrieval")


def oracle(records: dict[str, dict], task: str) -> dict[str, list[str]]:
    answer = export.TASKS[task].answer
    return {rid: [export.compose(r, answer)] for rid, r in records.items()}


def signature(source: str) -> tuple[str, list[str]] | None:
    """(kernel name, parameter names) of the last ``@wp.kernel`` in a Python source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef)
               and any("kernel" in ast.unparse(d) for d in n.decorator_list)]
    if not kernels:
        return None
    return kernels[-1].name, [a.arg for a in kernels[-1].args.args]


def map_names(text: str, source: dict, target: dict) -> str:
    """``text`` (the answer of ``source``) with ``source``'s kernel and parameter names as ``target``'s."""
    mine, theirs = signature(source["python_source"]), signature(target["python_source"])
    if mine is None or theirs is None:
        return text
    # Warp's names for the kernel: scale_fb36e44b_cpu_kernel_forward, wp_args_scale_fb36e44b
    text = re.sub(rf"\b(wp_args_)?{re.escape(mine[0])}(_[0-9a-f]{{8}})(?![0-9A-Za-z])", rf"\g<1>{theirs[0]}\2", text)
    mapping = {mine[0]: theirs[0]}
    mapping.update(zip(mine[1], theirs[1]))
    mapping.update({f"var_{a}": f"var_{b}" for a, b in zip(mine[1], theirs[1])})
    mapping.update({f"adj_{a}": f"adj_{b}" for a, b in zip(mine[1], theirs[1])})
    mapping = {a: b for a, b in mapping.items() if a != b}
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def prompt_shingles(record: dict, spec: export.Task) -> set[str]:
    """4-grams of the task's prompt: Python's normalised tokens, else words and symbols."""
    prompt = export.compose(record, spec.prompt)
    tokens = norm_tokens(prompt) if spec.prompt == ("python_source",) else re.findall(r"\w+|[^\w\s]", prompt)
    return shingles(tokens)


def retrieval(records: dict[str, dict], task: str, train: list[dict]) -> dict[str, list[str]]:
    spec = export.TASKS[task]
    usable = [r for r in train if not export.missing(spec, r)]
    if not usable:
        raise ValueError(f"no training record has the fields of {task} ({', '.join(spec.required)})")
    index = [(prompt_shingles(r, spec), r) for r in usable]
    out = {}
    for rid, record in records.items():
        mine = prompt_shingles(record, spec)
        best = max(index, key=lambda pair: jaccard(mine, pair[0]))[1]
        out[rid] = [map_names(export.compose(best, spec.answer), best, record)]
    return out
