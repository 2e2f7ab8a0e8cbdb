"""Token statistics per field: the shared estimate and percentiles checked against NumPy."""

from __future__ import annotations

import random

import numpy as np
import pytest

from jit.code.analysis import token_stats
from jit.code.analysis.token_stats import count_tokens


@pytest.mark.parametrize("text, pieces", [
    ("", 0), (None, 0),
    ("wp.tid()", 3),                     # wp | .tid | ()
    ("var_x = a+1", 7),                  # var | _x | " =" | " " | a | + | 1
    ("scaledvectorstruct", 3),           # scaledve | ctorstru | ct: at most 8 letters a piece
    ("x  ->  y\n\n    z", 7),            # x | "  " | "->" | "  " | y | "\n\n    " | z
])
def test_count_tokens_known_answers(text, pieces):
    assert count_tokens(text) == pieces


def _records(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    words = ["wp.tid()", "x[i] = y[i] * 2.0", "var_17", "float32", "{", "}", "\n    ", "adj_", "0.5f;"]

    def text(k):
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, k)))

    records = []
    for _ in range(n):
        rec = {"python_source": text(60), "cuda_forward": text(3000), "cpu_forward": text(3000)}
        if rng.random() < 0.5:
            rec["cuda_functions"] = rec["cpu_functions"] = text(2000)
        if rng.random() < 0.8:
            rec["cuda_backward"] = text(6000)
        records.append(rec)
    return records


def test_figures_match_numpy_percentiles_on_the_same_lengths():
    records = _records(400, 1)
    stats = token_stats.TokenStats()
    for rec in records:
        stats.add(rec)
    figures = stats.figures()

    for field in token_stats.FIELDS:
        lengths = np.array([count_tokens(r[field]) for r in records if r.get(field)])
        if not lengths.size:
            assert field not in figures
            continue
        row = figures[field]
        assert row["count"] == lengths.size and row["max"] == lengths.max()
        assert row["mean"] == pytest.approx(lengths.mean(), abs=0.05)
        for p in token_stats.PERCENTILES:
            assert row[f"p{p}"] == pytest.approx(np.percentile(lengths, p), abs=0.05)
    assert "cpu_backward" not in figures

    pair = np.array([count_tokens(r["python_source"]) + count_tokens(r.get("cuda_functions")) + count_tokens(r["cuda_forward"])
                     for r in records])
    row = figures["python+cuda"]
    assert row["p95"] == pytest.approx(np.percentile(pair, 95), abs=0.05)
    for context, key in ((4096, "fits_4k"), (8192, "fits_8k"), (32768, "fits_32k")):
        assert row[key] == pytest.approx((pair <= context).mean(), abs=1e-4)
    assert 0 < row["fits_4k"] < row["fits_8k"] <= row["fits_32k"] == 1  # the test data straddles 4k and 8k


def test_render_and_card_table_show_every_field():
    stats = token_stats.TokenStats()
    for rec in _records(50, 2):
        stats.add(rec)
    figures = stats.figures()
    text = token_stats.render(figures)
    card = token_stats.card_table(figures)
    for field, label in token_stats.FIELDS.items():
        assert (label in text) == (field in figures) == (label in card)
    assert f"{figures['python+cuda']['max']}" in text
    rows = [line for line in card.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + sum(name in figures for name in (*token_stats.FIELDS, *token_stats.PAIRS))
    assert all(line.count("|") == rows[0].count("|") for line in card.splitlines())


def test_no_records_gives_no_rows():
    figures = token_stats.TokenStats().figures()
    assert figures == {}
    assert "no code fields" in token_stats.render(figures)
