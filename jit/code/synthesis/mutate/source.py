"""Source text of a mutated unit: the seed's comments, blank lines and literals survive the AST.

``ast`` drops what a reader values most in real code: comments, the blank lines that group
statements, and literals as their author spelled them (``1.0e-6``, not ``1e-06``). ``notes``
reads them from the text with ``tokenize`` and ties them to the statement and constant nodes
of the parsed tree; ``render`` writes the tree back with them (a node a mutation made has no
notes, a node it moved keeps its own) and lets black lay the result out like Warp's own code.
What it leaves out: deciding whether a comment still holds after a mutation (a mutation that
changes what a comment names edits the comment itself, see ``Unit.rename_in_comments``).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from dataclasses import dataclass, field

from jit.code.synthesis.layout import format_source
from jit.code.synthesis.mutate.syntax import walk


@dataclass(slots=True)
class Note:
    comments: list[str] = field(default_factory=list)  # full-line comments just above the statement
    trailing: str | None = None  # a comment after a simple statement, on its line
    blank: bool = False  # a blank line separates it from the statement before


@dataclass(slots=True)
class Notes:
    """What ``ast`` forgets of one text, keyed by node identity (the nodes are kept alive here, so
    an identity is never reused by a node made later)."""

    statements: dict[int, tuple[ast.stmt, Note]] = field(default_factory=dict)
    literals: dict[int, tuple[ast.Constant, str]] = field(default_factory=dict)

    def note(self, node: ast.AST) -> Note | None:
        found = self.statements.get(id(node))
        return found[1] if found is not None else None

    def forget(self, node: ast.AST) -> None:
        self.statements.pop(id(node), None)

    def lead(self, stmt: ast.stmt, new: ast.stmt) -> None:
        """``new`` goes right before ``stmt``: the comments and blank line above ``stmt`` go above
        ``new``."""
        found = self.note(stmt)
        if found is None or not (found.comments or found.blank):
            return
        self.statements[id(new)] = (new, Note(found.comments, None, found.blank))
        found.comments, found.blank = [], False

    def move(self, old: ast.AST, new: ast.AST) -> None:
        """``new`` takes the notes of ``old`` (a statement wrapped into a loop, say)."""
        found = self.statements.pop(id(old), None)
        if found is not None:
            self.statements[id(new)] = (new, found[1])


def notes(tree: ast.Module, text: str) -> Notes:
    """Comments, blank lines and number spellings of ``text``, tied to the nodes of ``tree``."""
    above, trailing, blank, numbers = scan(text)
    out = Notes()
    for node in walk(tree):
        if isinstance(node, ast.stmt):
            first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            simple = not hasattr(node, "body")
            note = Note(list(above.get(first, [])), trailing.get(node.end_lineno) if simple else None, first in blank)
            if note.comments or note.trailing or note.blank:
                out.statements[id(node)] = (node, note)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and (node.lineno, node.col_offset) in numbers
        ):
            out.literals[id(node)] = (node, numbers[(node.lineno, node.col_offset)])
    return out


FORMATTER_DIRECTIVE = re.compile(r"#\s*(fmt:\s*(off|on|skip)|yapf:\s*(disable|enable))\b")


@functools.lru_cache(maxsize=4096)
def scan(text: str) -> tuple[dict, dict, frozenset, dict]:
    """(comments above each code line, trailing comments, lines after a blank line, number
    spellings by position) of a text: the tokenizing, done once per seed."""
    above: dict[int, list[str]] = {}
    trailing: dict[int, str] = {}
    blank: set[int] = set()
    numbers: dict[tuple[int, int], str] = {}
    pending: list[str] = []
    gap = False
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        row = tok.start[0]
        if tok.type == tokenize.COMMENT and FORMATTER_DIRECTIVE.match(tok.string):
            continue  # it protected the seed's hand layout, which a render does not keep
        if tok.type == tokenize.COMMENT:
            if tok.line[: tok.start[1]].strip():
                trailing[row] = tok.string
            else:
                pending.append(tok.string)
        elif tok.type == tokenize.NL and not tok.line.strip():
            gap = True
        elif tok.type not in (
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
            tokenize.ENCODING,
        ):
            if row not in code_lines:
                code_lines.add(row)
                if pending:
                    above[row] = pending
                    pending = []
                if gap:
                    blank.add(row)
                gap = False
            if tok.type == tokenize.NUMBER:
                numbers[tok.start] = tok.string
    return above, trailing, frozenset(blank), numbers


class _Writer(ast._Unparser):
    """``ast.unparse`` that also writes the notes of the nodes it meets."""

    def __init__(self, notes: Notes):
        super().__init__()
        self._notes = notes

    def traverse(self, node):
        note = self._notes.note(node) if isinstance(node, ast.stmt) else None
        if note is not None:
            if note.blank:
                self.maybe_newline()
            for comment in note.comments:
                self.fill(comment)
        super().traverse(node)
        if note is not None and note.trailing:
            self.write("  " + note.trailing)

    def get_type_comment(self, node):
        return None  # kernels carry no type comments, and new nodes have no line to look one up by

    def visit_Constant(self, node):
        found = self._notes.literals.get(id(node))
        if found is not None and found[0].value == node.value and type(found[0].value) is type(node.value):
            self.write(found[1])
        else:
            super().visit_Constant(node)


def render(tree: ast.Module, found: Notes, layout: bool = True) -> str:
    """The source of ``tree`` with its notes; laid out by black when ``layout``."""
    parts = []
    for node in tree.body:
        parts.append(_Writer(found).visit(node).strip("\n"))
    imports = [p for p, n in zip(parts, tree.body) if isinstance(n, (ast.Import, ast.ImportFrom))]
    rest = [p for p, n in zip(parts, tree.body) if not isinstance(n, (ast.Import, ast.ImportFrom))]
    text = (
        "\n".join(imports)
        + "\n\n\n"
        + _join(rest, [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))])
    )
    return format_source(text) if layout else text


def _join(parts: list[str], nodes: list[ast.stmt]) -> str:
    """Definitions two blank lines apart; consecutive constants stay together."""
    out = ""
    for i, (part, node) in enumerate(zip(parts, nodes)):
        if i:
            both_constants = not isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not isinstance(
                nodes[i - 1], (ast.FunctionDef, ast.ClassDef)
            )
            out += "\n" if both_constants else "\n\n\n"
        out += part
    return out + "\n"


def plain(tree: ast.Module) -> str:
    """The code of ``tree`` alone: no comments, literals as Python prints them."""
    return _Writer(Notes()).visit(tree)
