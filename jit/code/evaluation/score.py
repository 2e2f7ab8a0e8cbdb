"""Scoring predictions against a benchmark: per prediction, then per tier, with pass@k.

For each benchmark record the task applies to, the inputs are the record's stored ``io`` inputs
and ``FRESH_SETS`` sets drawn afresh from the eval seed (a model that memorised stored outputs
gains nothing; every second set starts its output arrays from drawn values instead of zeros, so
an element left alone or a dropped store of zero shows), and ``variants.VARIANT_SETS`` of each wider
launch the benchmark keeps for the kernel (``variants``: inputs that reach code the record's own
launch leaves alone); the reference outputs are the stored ones and, for the fresh sets, the
reference kernel's (run in the sandbox like any prediction). Every array is compared after the
launch, inputs too (a kernel may write into one).
Each prediction then gets:

- text: exact, exact after whitespace normalisation, exact after renumbering temporaries and
  hash suffixes (``text``), and chrF;
- ``compiles``: Warp's build (Python), Warp's clang (C++), NVRTC (CUDA); None for PTX;
- ``matches``: every output equal to the reference's within the dtype's tolerance on every
  input set (``cpu-run`` mode: *2py and py2cpp); None where nothing runs here (``compile-only``:
  the CUDA tasks without a GPU; ``text-only``: py2ptx).

A prediction passes when it matches (cpu-run), compiles (compile-only) or is exact after
renumbering (text-only). pass@k is the unbiased estimator of Chen et al. (2021),
``1 - C(n-c, k) / C(n, k)`` over n predictions of which c pass, averaged over ids (an id without
predictions counts as failed). What it leaves out: reading files and the command line.
"""

from __future__ import annotations

import collections
import functools
import math
import time

import numpy as np

from jit.code import export
from jit.code.evaluation import running, sandbox, text, tiers, variants
from jit.code.evaluation.bench import item_index

MODES = {"cuda2py": "cpu-run", "purpose2py": "cpu-run", "py2cpp": "cpu-run", "py2cuda": "compile-only",
         "py2cuda-adjoint": "compile-only", "py2ptx": "text-only"}
# (rtol, atol relative to the output's largest magnitude) per float width
TOLERANCE = {2: (1e-2, 1e-3), 4: (1e-4, 1e-5), 8: (1e-9, 1e-12)}
KS = (1, 5, 10)
FRESH_SETS = 8  # input sets drawn afresh per eval, besides the stored one (launches cost milliseconds)


# ---------------------------------------------------------------------------------------------
# inputs and comparison


def reference_io(record: dict, seed: int) -> tuple[list[dict], dict, dict | None]:
    """([the stored inputs, ``FRESH_SETS`` sets drawn from ``seed`` and the record id], the stored outputs,
    the gradient check's weights and inputs or None). Every second fresh set starts its output
    arrays from drawn values (``variants.prefill``).

    Gradients are compared where the benchmark's gradient check passed: of ``sum(w * output)``
    over the differentiable float outputs, with weights drawn from ``seed``, by every float
    array input. The reference kernel is defined only to read its parameter types, and
    released at once: Warp numbers helpers by how often a name was defined, and a child forked
    later must build the record exactly as the benchmark did.
    """
    from jit.code.checks import launch as L
    from jit.code.extraction import warp_backend as wb

    handle = wb.define([record["python_source"]], f"jit_eval_plan_{item_index(record['id'])}")
    try:
        kernel = handle.namespace[record["kernel_name"]]
        plan = L.plan_from_io(kernel, record["io"])
        stored = {a.name: L.decode(a, record["io"]["inputs"][a.name]) for a in plan.args}
        outputs = {a.name: L.decode(a, record["io"]["outputs"][a.name]) for a in plan.outputs()}
        described = L.plan_from_metadata(kernel, record["metadata"])
        rng = np.random.default_rng([seed % 2**63, item_index(record["id"])])
        drawn = [L.random_values(described, rng) for _ in range(FRESH_SETS)]
        for values in drawn[1::2]:
            variants.prefill(described, values, rng)
        plans = [L.plan_from_metadata(kernel, {"launch": v}) for v in running.variants_of(record)]
        for k, (plan_k, launch_k) in enumerate(zip(plans, running.variants_of(record)), 1):
            drawn += variants.variant_sets(plan_k, k, rng, launch_k)
        grads = None
        wanted = set(record["metadata"].get("differentiable_outputs") or ())
        if (record.get("validation") or {}).get("gradient") == "passed":
            def weights_of(p):
                return {a.name: rng.uniform(0.5, 1.5, L.zeros(a.dtype, tuple(a.shape)).shape).astype(
                    L.zeros(a.dtype, ()).dtype) for a in p.outputs() if a.name in wanted and a.is_float}
            weights = weights_of(described)
            wrt = [a.name for a in described.args if a.is_array and a.role == "in" and a.is_float]
            grads = {"weights": weights, "wrt": wrt,
                     "variant_weights": [weights_of(p) for p in plans]} if weights and wrt else None
    finally:
        handle.release()
    return [stored, *drawn], outputs, grads


def _leaves(value: np.ndarray, name: str) -> list[tuple[str, np.ndarray]]:
    if value.dtype.names is None:
        return [(name, value)]
    return [leaf for f in value.dtype.names for leaf in _leaves(value[f], f"{name}.{f}")]


def first_mismatch(want: list[dict], got: list[dict]) -> str | None:
    """Where the outputs first differ beyond tolerance (``set 1: b[3]: want 0.5, got 0.25``), or None."""
    for n, (w, g) in enumerate(zip(want, got)):
        for name in w:
            if name not in g:
                return f"set {n}: output {name} missing"
            for (label, a), (_, b) in zip(_leaves(np.asarray(w[name]), name), _leaves(np.asarray(g[name]), name)):
                if a.shape != b.shape:
                    return f"set {n}: {label} has shape {b.shape}, want {a.shape}"
                bad = _differs(a, b)
                if bad.any():
                    at = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
                    return f"set {n}: {label}{list(at)}: want {_plain(a[at])}, got {_plain(b[at])}"
    return None


def _plain(value) -> str:
    return repr(value.item() if hasattr(value, "item") else value)


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return a != b
    rtol, atol = TOLERANCE.get(a.dtype.itemsize, TOLERANCE[4])
    x, y = a.astype(np.float64), b.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0)))
    return ~(np.isclose(y, x, rtol=rtol, atol=atol * scale, equal_nan=True))


# ---------------------------------------------------------------------------------------------
# one prediction


def reference_text(record: dict, task: str) -> str:
    return export.compose(record, export.TASKS[task].answer)


def blind(record: dict) -> dict:
    """The record as a prediction's child may see it: no stored outputs, no gradients."""
    io = dict(record["io"])
    io.pop("outputs", None)
    return dict(record, io=io)


def child_call(task: str, record: dict, prediction: str, inputs: list[dict], grads: dict | None = None):
    """What the sandboxed child runs for one prediction."""
    code = running.unfenced(prediction)
    if task in running.PYTHON_TASKS:
        return running.run_python(code, record["kernel_name"], record["metadata"]["launch"], inputs, grads,
                                  running.variants_of(record))
    if task == "py2cpp":
        return running.run_cpp(record, code, inputs, grads)
    running.compile_cuda(task, record, code)
    return None


def score_one(task: str, record: dict, prediction: str, inputs: list[dict], want: list[dict] | None,
              seconds: float, grads: dict | None = None, headers: sandbox.Headers | None = None) -> dict:
    reference = reference_text(record, task)
    row = {"id": record["id"], "tier": record["metadata"]["bench"]["tier"], "mode": MODES[task],
           **text.scores(running.unfenced(prediction), reference), "compiles": None, "matches": None,
           "error": None, "mismatch": None}
    if MODES[task] == "text-only":
        row["passed"] = row["renamed"]
        return row
    t0 = time.perf_counter()
    call = functools.partial(child_call, task, blind(record), prediction, inputs, grads)
    got = sandbox.contained(call, seconds, headers=headers)
    row["seconds"] = round(time.perf_counter() - t0, 3)
    # a hang or a crash scores as failed, whatever it had got to
    row["compiles"] = got.status == "ok" or (got.status == "error" and not got.error.startswith("BuildError")
                                             and MODES[task] == "cpu-run")
    if got.status != "ok":
        row["error"] = f"{got.status}: {got.error}"
    if MODES[task] == "cpu-run":
        if got.status == "ok":
            row["mismatch"] = first_mismatch(want, got.value)
            row["matches"] = row["mismatch"] is None
        else:
            row["matches"] = False
        row["passed"] = row["matches"]
    else:
        row["passed"] = bool(row["compiles"])
    return row


# ---------------------------------------------------------------------------------------------
# a run


def applicable(records: dict[str, dict], task: str) -> dict[str, dict]:
    return {i: r for i, r in records.items() if task in r["metadata"]["bench"]["tasks"]}


def reference_outputs(record: dict, seed: int, seconds: float,
                      headers: sandbox.Headers | None = None) -> tuple[list[dict], list[dict], dict | None]:
    """(input sets, reference outputs and gradients, gradient spec) of a record: the stored set
    and the fresh one, both run by the reference kernel in the sandbox (the stored set's outputs
    are the recorded ones); the stored set alone when the reference fails on the fresh one."""
    inputs, stored, grads = reference_io(record, seed)
    variants = running.variants_of(record)
    base = [s for s in inputs if running.VARIANT not in s]
    # the wider launches' sets, then the gradients, are left out if the reference fails on them
    attempts = [(inputs, grads)] + ([(base, grads)] if len(base) < len(inputs) else [])
    attempts += [(sets, None) for sets, _ in attempts] if grads else []
    for sets, spec in attempts:
        ran = sandbox.contained(functools.partial(running.run_python, record["python_source"], record["kernel_name"],
                                                  record["metadata"]["launch"], sets, spec, variants),
                                seconds, headers=headers)
        if ran.status == "ok":
            inputs, grads = sets, spec
            break
    if ran.status != "ok":
        return inputs[:1], [stored], None
    want = [dict(ran.value[0], **stored)] + ran.value[1:]
    keep = [0] + [n for n in range(1, len(want)) if _finite(want[n])]
    return [inputs[n] for n in keep], [want[n] for n in keep], grads


def _finite(outputs: dict) -> bool:
    return all(np.all(np.isfinite(leaf)) for v in outputs.values() for _, leaf in _leaves(np.asarray(v), "")
               if leaf.dtype.kind == "f")


@functools.cache
def warm_headers() -> sandbox.Headers | None:
    """The precompiled headers of the CPU builds, built once per process (``running.warm_headers``)."""
    return running.warm_headers()


def evaluate(task: str, records: dict[str, dict], grouped: dict[str, list[str]], seed: int,
             seconds: float = sandbox.SECONDS, progress=None) -> tuple[list[dict], dict]:
    """(one row per prediction, the summary) for the task's records."""
    t0 = time.perf_counter()
    todo = applicable(records, task)
    headers = warm_headers() if MODES[task] == "cpu-run" else None
    rows = []
    for rid, record in todo.items():
        predictions = grouped.get(rid, [])
        if not predictions:
            continue
        inputs, want, grads = [], None, None
        if MODES[task] == "cpu-run":
            inputs, want, grads = reference_outputs(record, seed, seconds, headers)
        for n, prediction in enumerate(predictions):
            row = score_one(task, record, prediction, inputs, want, seconds, grads, headers)
            rows.append({"n": n, **row})
            if progress is not None:
                progress(len(rows))
    seconds_taken = time.perf_counter() - t0
    return rows, summary(task, todo, rows, seed, seconds_taken)


def pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _figures(ids: list[str], rows: list[dict]) -> dict:
    by_id = collections.defaultdict(list)
    for r in rows:
        by_id[r["id"]].append(r)
    def mean(key):
        values = [float(r[key]) for r in rows if r[key] is not None]
        return round(100 * sum(values) / len(values), 2) if values else None
    out = {"ids": len(ids), "predicted": sum(1 for i in ids if by_id[i]), "predictions": len(rows),
           "exact": mean("exact"), "whitespace": mean("whitespace"), "renamed": mean("renamed"),
           "chrf": round(sum(r["chrf"] for r in rows) / len(rows), 2) if rows else None,
           "compiles": mean("compiles"), "matches": mean("matches")}
    least = min((len(by_id[i]) for i in ids if by_id[i]), default=0)
    for k in KS:
        if k <= max(least, 1) and (k == 1 or k <= least):
            values = [pass_at_k(len(by_id[i]), sum(r["passed"] for r in by_id[i]), k) if by_id[i] else 0.0
                      for i in ids]
            out[f"pass@{k}"] = round(100 * sum(values) / len(values), 2) if values else None
    return out


def summary(task: str, todo: dict[str, dict], rows: list[dict], seed: int, seconds: float) -> dict:
    per_tier = {}
    for t in (*tiers.TIERS, "all"):
        ids = [i for i, r in todo.items() if t == "all" or r["metadata"]["bench"]["tier"] == t]
        per_tier[t] = _figures(ids, [r for r in rows if r["id"] in set(ids)])
    return {"task": task, "mode": MODES[task], "seed": seed, "tiers": per_tier, "seconds": round(seconds, 1),
            "predictions_per_second": round(len(rows) / seconds, 2) if seconds else None,
            "mode_note": {"cpu-run": "built and run on the CPU on stored and fresh inputs",
                          "compile-only": "compiled with NVRTC only: no GPU here to launch it",
                          "text-only": "text metrics only: PTX is not assembled here"}[MODES[task]]}


COLUMNS = (("ids", "ids"), ("predictions", "preds"), ("exact", "exact%"), ("whitespace", "ws%"),
           ("renamed", "renamed%"), ("chrf", "chrF"), ("compiles", "compile%"), ("matches", "run&match%"))


def table(result: dict) -> str:
    """The terminal table: one row per tier and one for all."""
    extra = [k for k in result["tiers"]["all"] if k.startswith("pass@")]
    heads = ["tier"] + [h for _, h in COLUMNS] + extra
    rows = [heads]
    for t, figures in result["tiers"].items():
        rows.append([t] + ["-" if figures.get(k) is None else str(figures[k]) for k, _ in COLUMNS]
                    + ["-" if figures.get(k) is None else str(figures[k]) for k in extra])
    widths = [max(len(r[i]) for r in rows) for i in range(len(heads))]
    lines = [f"{result['task']} ({result['mode']}: {result['mode_note']})"]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(lines)
