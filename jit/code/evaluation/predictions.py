"""Reading a model's predictions: JSONL of ``{"id": ..., "prediction": ...}``, several lines per id
for pass@k, in the order the model wrote them.

``read(path, known_ids)`` groups predictions by id and refuses, in one line that says what to fix,
a file that is not such JSONL or names ids the benchmark does not have (the usual mistake: a
prediction file made from another benchmark or another export). What it leaves out: scoring.
"""

from __future__ import annotations

import json
import os


class PredictionsError(Exception):
    """A predictions file that cannot be scored, with what is wrong and how to fix it."""


def read(path: str, known_ids: set[str] | None = None) -> dict[str, list[str]]:
    """{id: [prediction, ...]} in file order."""
    if not os.path.isfile(path):
        raise PredictionsError(f"{path}: no such file; give a JSONL file of {{\"id\", \"prediction\"}} lines")
    grouped: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise PredictionsError(f"{path}:{n}: not JSON; each line must be {{\"id\": ..., \"prediction\": ...}}") from None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("prediction"), str):
                raise PredictionsError(f"{path}:{n}: each line needs a string \"id\" and a string \"prediction\"")
            grouped.setdefault(row["id"], []).append(row["prediction"])
    if not grouped:
        raise PredictionsError(f"{path} holds no predictions")
    if known_ids is not None:
        unknown = [i for i in grouped if i not in known_ids]
        if unknown:
            raise PredictionsError(f"{path}: {len(unknown)} ids are not in the benchmark for this task (first: "
                                   f"{unknown[0]}); predict for the ids of the benchmark's exported test split")
    return grouped


def write(path: str, grouped: dict[str, list[str]]) -> None:
    """The JSONL ``read`` reads (baselines write their predictions with it)."""
    with open(path, "w", encoding="utf-8") as f:
        for rid, texts in grouped.items():
            for text in texts:
                f.write(json.dumps({"id": rid, "prediction": text}) + "\n")
