"""What a kernel is for, in the words of its author: its docstring or the comment that leads it.

Records of real code carry it as ``metadata.purpose`` when there is one (generated records say
it themselves, composed from their pieces). What it leaves out: writing a purpose where the
author did not (a kernel without a docstring or leading comment has none).
"""

from __future__ import annotations

import ast
import re

MAX_CHARS = 400  # a purpose is a sentence or two, not the kernel's manual

_RST = re.compile(r":\w+:`~?([^`]+)`|``([^`]+)``")  # :func:`x` and ``x`` read as x


def purpose_of(source: str, kernel_name: str) -> str | None:
    """The first paragraph of the kernel's docstring, else the comment block right above its
    decorators or at the top of its body; None when the author wrote neither."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernel = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel_name), None)
    if kernel is None:
        return None
    text = ast.get_docstring(kernel) or _leading_comment(source.splitlines(), kernel)
    if not text:
        return None
    paragraph = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    paragraph = _RST.sub(lambda m: m.group(1) or m.group(2), " ".join(paragraph.split()))
    if len(paragraph) > MAX_CHARS:  # cut at the last sentence end that fits
        cut = paragraph[:MAX_CHARS]
        paragraph = cut[: cut.rfind(". ") + 1] if ". " in cut else cut.rsplit(" ", 1)[0] + " ..."
    return paragraph or None


def _leading_comment(lines: list[str], kernel: ast.FunctionDef) -> str:
    first = min([kernel.lineno, *(d.lineno for d in kernel.decorator_list)]) - 1  # 0-based line of the first decorator
    above = []
    i = first - 1
    while i >= 0 and lines[i].strip().startswith("#"):
        above.insert(0, lines[i].strip().lstrip("#").strip())
        i -= 1
    if above:
        return "\n".join(above)
    inside = []
    for line in lines[kernel.body[0].lineno - 1 - _gap(lines, kernel):]:
        if not line.strip().startswith("#"):
            break
        inside.append(line.strip().lstrip("#").strip())
    return "\n".join(inside)


def _gap(lines: list[str], kernel: ast.FunctionDef) -> int:
    """Comment lines between the signature and the first statement."""
    n, i = 0, kernel.body[0].lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        n, i = n + 1, i - 1
    return n
