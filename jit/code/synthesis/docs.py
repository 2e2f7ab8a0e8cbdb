"""Kernel docstrings as authors write them, from a kernel's purpose and the details of its variant.

A record's ``metadata.purpose`` is the whole sentence its pieces compose. The docstring is what an
author would write above the code: mostly nothing (325 of the 410 kernels of Warp's examples and
library code have no docstring, 107 of the 159 self-contained ones, in warp-lang 1.19), else a
summary line, with the variant's details in a paragraph below it. The summary drops the purpose's
long asides (a parenthesis of three words or more, words only: the code says it) and moves what
follows a semicolon to the paragraph, so it reads as a summary, not a specification.

Comments get the same treatment (``brief_comments``): most authors write a short note, a label such as
"symplectic Euler" or "clamp to the grid", not the argument for it (indented comments of Warp's
examples run to 42 characters at the median).

What it leaves out: which details a kernel has (its family says, by ``Pattern.note`` or a piece's
phrase) and layout past wrapping (``layout``).
"""

from __future__ import annotations

import random
import re
import textwrap

from jit.code.synthesis.stmt import INDENT

DOC_WIDTH = 96  # docstring text columns (black leaves docstrings as written)
NO_DOCSTRING = 0.6  # kernels left without one, of those whose author may leave it out
# the same for test-style checks: none leave it out. 2,160 of the 2,333 kernels of Warp's tests have no
# docstring, but their test code on the host says which inputs they get; a check standing alone needs its
# docstring to say so ("for int8 numerators in [-100, 100] and the divisor 5"), or a reader takes a
# check that holds on those inputs for a bug on others (in one blind review, all six undocumented checks
# of the sample were flagged, 12 of the 19 findings on pattern kernels)
NO_TEST_DOCSTRING = 0.0
BRIEF = 0.8  # authors whose comments are brief notes (the others explain at length)
BRIEF_WIDTH = 60  # a brief note longer than this, even cut to its first clause, is left out

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
    """(the summary line, what goes to the paragraph below it) of a purpose sentence. The line stays
    whole however long: a comma also separates the items of a list ("under gravity, a ground contact
    and a tether"), and a docstring cut there would leave out part of what the kernel does."""
    head, _, rest = _ASIDE.sub("", purpose.strip().rstrip(".")).partition("; ")
    return sentence(head), sentence(rest)


# a note that bounds its inputs ("components in [-1, 1]", "|x| <= 1.5", "values below 7"): the argument
# for a tolerance or a guard left out, which a brief author does not write down
_BOUND = re.compile(r"\bin \[|\b(?:below|up to|at most|under) -?\d|[<>]=? *-?\d")


def brief(text: str) -> str | None:
    """A comment as a brief note: what comes before its first ": " or "; " (the label, not the
    argument after it), or None when even that is longer than ``BRIEF_WIDTH`` or bounds inputs."""
    for sep in (": ", "; "):
        head, found, _ = text.partition(sep)
        if found and len(head) >= 3 and head.count("(") == head.count(")") and head.count("[") == head.count("]"):
            text = head
            break
    return text if len(text) <= BRIEF_WIDTH and not _BOUND.search(text) else None


def brief_comments(source: str) -> str:
    """``source`` with every comment inside a function made a brief note (``brief``), or left out.
    A comment wrapped over several lines is read as one."""
    lines = source.split("\n")
    out, i = [], 0
    while i < len(lines):
        text = lines[i].lstrip()
        if not (text.startswith("# ") and text != lines[i]):
            out.append(lines[i])
            i += 1
            continue
        indent = lines[i][: len(lines[i]) - len(text)]
        run = []
        while i < len(lines) and lines[i].startswith(indent + "# "):
            run.append(lines[i][len(indent) + 2:].strip())
            i += 1
        note = brief(" ".join(run))
        if note is not None:
            out.append(f"{indent}# {note}")
    return "\n".join(out)


def docstring(purpose: str, detail: str = "", rng: random.Random | None = None, none: float = NO_DOCSTRING) -> str:
    """The kernel's docstring lines (indented), or "" when this author writes none (``rng`` given:
    a share ``none`` of authors write none)."""
    if rng is not None and rng.random() < none:
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
