"""Text scores of a prediction against the reference: exact, normalised exact, chrF.

Three levels of agreement, each forgiving more than the last:

- ``whitespace``: equal once every run of whitespace is one space (layout aside);
- ``renamed``: equal once Warp's temporaries (``var_N``, ``adj_N``) are numbered in order of
  first use, every 8-hex-digit hash suffix (``scale_fb36e44b``, ``P_0f49e99a``) is numbered the
  same way, and the ``// path:line`` comments naming where a helper was defined are dropped:
  none of these says anything a translation could know or get wrong;
- ``chrf``: sacrebleu's chrF (character n-gram F-score, 0-100) of the raw texts.

What it leaves out: whether the text compiles or runs (``running``).
"""

from __future__ import annotations

import re

TEMPORARY = re.compile(r"\b(var|adj)_(\d+)\b")
HASH_SUFFIX = re.compile(r"(?<=[A-Za-z0-9]_)([0-9a-f]{8})(?=\b|_)")
DEFINED_AT = re.compile(r"^[ \t]*// \S+:\d+[ \t]*$", re.MULTILINE)


def whitespace(text: str) -> str:
    return " ".join(text.split())


def renamed(text: str) -> str:
    """``text`` with temporaries and hash suffixes numbered by first use, then ``whitespace``."""
    text = DEFINED_AT.sub("", text)
    numbers: dict[str, int] = {}
    text = TEMPORARY.sub(lambda m: f"{m.group(1)}_{numbers.setdefault(m.group(2), len(numbers))}", text)
    hashes: dict[str, int] = {}
    text = HASH_SUFFIX.sub(lambda m: f"h{hashes.setdefault(m.group(1), len(hashes))}", text)
    return whitespace(text)


def chrf(prediction: str, reference: str) -> float:
    from sacrebleu.metrics import CHRF

    return round(CHRF().sentence_score(prediction, [reference]).score, 2)


def scores(prediction: str, reference: str) -> dict:
    return {
        "exact": prediction.strip() == reference.strip(),
        "whitespace": whitespace(prediction) == whitespace(reference),
        "renamed": renamed(prediction) == renamed(reference),
        "chrf": chrf(prediction, reference),
    }
