"""Kernel docstrings as authors write them, from a kernel's purpose and the details of its variant.

A record's ``metadata.purpose`` is the whole sentence its pieces compose. The docstring is what an
author would write above the code: often nothing (107 of the 159 self-contained kernels of Warp's
examples and library code have no docstring, in warp-lang 1.19), else a summary line, with the
variant's details in a paragraph below it. The summary drops the purpose's long asides (a
parenthesis of three words or more, words only: the code says it) and moves what follows a
semicolon to the paragraph, so it reads as a summary, not a specification.

What it leaves out: which details a kernel has (its family says, by ``Pattern.note`` or a piece's
phrase) and layout past wrapping (``layout``).
"""

from __future__ import annotations

import random
import re
import textwrap

from jit.code.synthesis.stmt import INDENT

DOC_WIDTH = 96  # docstring text columns (black leaves docstrings as written)
NO_DOCSTRING = 0.3  # kernels left without one, of those whose author may leave it out

# "(a brute-force pass for small sets)": an aside of three words or more, words only (maths such as
# "(b - R x)" or "(w, 0)" stays)
_ASIDE = re.compile(r"\s*\((?:[A-Za-z][\w.'-]*[,;:]?\s+){2,}[A-Za-z][\w.'-]*\)")


# British spellings the generator's phrases use, and Warp's (American) spelling of them: names,
# comments and docstrings read as NVIDIA's code does ("neighbor", "normalization")
_AMERICAN = {"neighbour": "neighbor", "normalis": "normaliz", "centre": "center", "centred": "centered",
             "colour": "color", "behaviour": "behavior", "favour": "favor", "randomis": "randomiz",
             "regularis": "regulariz", "minimis": "minimiz", "maximis": "maximiz", "generalis": "generaliz",
             "labelled": "labeled", "modelled": "modeled", "modelling": "modeling", "travelled": "traveled",
             "licence": "license", "analyse": "analyze", "initialis": "initializ", "discretis": "discretiz",
             "stabilis": "stabiliz", "linearis": "lineariz", "optimis": "optimiz", "parametris": "parametriz"}
_BRITISH = re.compile("|".join(sorted(_AMERICAN, key=len, reverse=True)), re.IGNORECASE)


def american(text: str) -> str:
    """``text`` with Warp's American spellings ("neighbours" -> "neighbors", "Normalised" ->
    "Normalized"), in names, comments and docstrings alike, the first letter's case kept."""
    def swap(m: re.Match) -> str:
        word = _AMERICAN[m.group(0).lower()]
        return word[0].upper() + word[1:] if m.group(0)[0].isupper() else word

    return _BRITISH.sub(swap, text)


def sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".") if text else ""


def summary(purpose: str) -> tuple[str, str]:
    """(the summary line, what goes to the paragraph below it) of a purpose sentence."""
    head, _, rest = _ASIDE.sub("", purpose.strip().rstrip(".")).partition("; ")
    return sentence(head), sentence(rest)


def docstring(purpose: str, detail: str = "", rng: random.Random | None = None) -> str:
    """The kernel's docstring lines (indented), or "" when this author writes none (``rng`` given)."""
    if rng is not None and rng.random() < NO_DOCSTRING:
        return ""
    head, rest = summary(purpose)
    lines = textwrap.wrap(head, DOC_WIDTH, break_on_hyphens=False)  # "non-negativity" stays one word
    paragraph = " ".join(part for part in (rest, detail.strip()) if part)
    if paragraph:
        lines += [""] + textwrap.wrap(paragraph, DOC_WIDTH, break_on_hyphens=False)
    if len(lines) == 1:
        return f'{INDENT}"""{lines[0]}"""'
    return "\n".join([f'{INDENT}"""{lines[0]}', *(INDENT + line if line else "" for line in lines[1:]),
                      f'{INDENT}"""'])
