"""Normalised token streams of Python sources, and their n-gram shingles.

One normalisation serves every similarity this project measures (the realism benchmark's
nearest-neighbour figure, MinHash near-duplicate control, decontamination): comments and layout
are dropped, identifiers become ``ID`` (except Python keywords, ``wp`` and the
attribute right after ``wp.``, which name Warp's API), numbers become ``NUM`` and string
literals (docstrings too) ``STR``. Two kernels that differ only in names and constants have the same stream.
What it leaves out: hashing the shingles (``dedup``) and comparing them (``realism``).
"""

from __future__ import annotations

import io
import keyword
import tokenize

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}


def norm_tokens(source: str) -> list[str]:
    """The normalised token stream of ``source`` (an unparsable tail is cut off, not raised)."""
    out: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in _SKIP:
                continue
            if tok.type == tokenize.NAME:
                after_wp = len(out) >= 2 and out[-1] == "." and out[-2] == "wp"
                out.append(tok.string if (tok.string == "wp" or after_wp or keyword.iskeyword(tok.string)) else "ID")
            elif tok.type == tokenize.NUMBER:
                out.append("NUM")
            elif tok.type == tokenize.STRING:
                out.append("STR")
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def shingles(tokens: list[str], n: int = 4) -> set[str]:
    """The set of ``n``-grams of a token stream (the whole stream when it is shorter than ``n``)."""
    if len(tokens) < n:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
