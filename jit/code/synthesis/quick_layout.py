"""black's layout of a generated module, without black, for the modules where that is simple.

Generated text is written in black's spacing already; what black changes in it is, nearly always,
the layout of ``def`` signatures (a long one wrapped, a wrapped one that fits joined), the run of
blank lines after the imports, and a simple statement past the limit whose value is one call (its
arguments wrapped) or a sum of three or more terms (wrapped in parentheses). ``laid_out`` does
those itself, and returns ``None`` (run black) for anything else black might change: a statement
still past the limit after that, a bracketed expression over several lines, a ``**``, a slice, a
single-quoted string, a number black spells otherwise, a redundant pair of parentheses, a blank
line black would add or remove, a comment not where black puts it, trailing white space. A test
holds it to black's output on generated kernels of every source (``test_layout``); black itself
costs about 10 ms a module, this a tenth of that.
"""

from __future__ import annotations

import io
import re
import tokenize

INDENT = "    "
_NUMBER = re.compile(r"(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:e[+-]?[0-9_]+)?|0x[0-9A-F_]+")
_OPENING = ("return", "if", "elif", "while", "assert", "del", "in", "not", "=", "yield", "await")
_TOP = re.compile(r"(@|def |class |async def )")
_FSTRING = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12 tokenizes f-strings in parts


def laid_out(source: str, width: int) -> str | None:
    """``source`` as black lays it out at ``width`` columns, or ``None`` when that is not simple."""
    if "\t" in source or "\\\n" in source or "\r" in source:
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    signatures = _signatures(tokens)
    if signatures is None or not _tokens_plain(tokens, signatures):
        return None
    lines = source.split("\n")
    plain_rows = _one_line_statements(tokens)
    text_rows = _docstring_rows(tokens)
    out: list[str] = []
    long_text: set[str] = set()  # docstring lines past the limit, kept as black keeps them
    row = 1  # 1-based line number in ``lines``
    while row <= len(lines):
        sig = signatures.get(row)
        if sig is not None:
            end, text = sig
            laid = _signature(text, width)
            if laid is None:
                return None
            out += laid
            row = end + 1
            continue
        line = lines[row - 1]
        if len(line) > width and row in text_rows:  # black leaves a docstring's lines as they are
            long_text.add(line)
            out.append(line)
        elif len(line) > width:
            split = _statement(line, width) if row in plain_rows else None
            if split is None:
                return None
            out += split
        else:
            out.append(line)
        row += 1
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    out = _cut_blank_runs(out)
    if not out or not _blank_lines_kept(out) or any(
            (len(line) > width and line not in long_text) or line != line.rstrip() for line in out):
        return None
    return "\n".join(out) + "\n"


_COMPOUND = {"if", "elif", "else", "while", "for", "with", "try", "except", "finally", "def", "class", "async",
             "assert", "del", "import", "from", "raise", "global", "nonlocal", "lambda", "yield", "await", "@"}
_STRING = re.compile(r'"[\w .-]*"')
_DEPTH0_DECLINED = re.compile(r" (?:and|or|not|if|else|in|is|for|lambda|//|%|@|\||&|\^|<<|>>|<|>|<=|>=|==|!=) ")
_ASSIGN = re.compile(r" (?:[-+*/%&|^@]|//|<<|>>|\*\*)?= ")


def _docstring_rows(tokens: list[tokenize.TokenInfo]) -> set[int]:
    """Rows of triple-quoted strings but their last (where the closing quotes are)."""
    return {row for tok in tokens if tok.type == tokenize.STRING and tok.string.startswith('"""')
            for row in range(tok.start[0], tok.end[0])}


def _one_line_statements(tokens: list[tokenize.TokenInfo]) -> set[int]:
    """Rows holding one whole simple statement (not a block's header), with no comment."""
    rows, first, clean = set(), None, True
    for tok in tokens:
        if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.ENCODING):
            continue
        if tok.type == tokenize.NEWLINE:
            if first is not None and clean and first.start[0] == tok.start[0] and first.string not in _COMPOUND:
                rows.add(first.start[0])
            first, clean = None, True
            continue
        if first is None:
            first = tok
        if tok.type == tokenize.COMMENT:
            clean = False
    return rows


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += (c in "([{") - (c in ")]}")
        if depth < 0:
            return False
    return depth == 0


def _depth0(text: str) -> str:
    """``text`` with everything inside brackets blanked out (same length), so what remains is the
    top level."""
    out, depth = [], 0
    for c in text:
        if c in "([{":
            depth += 1
            out.append(c if depth == 1 else " ")
        elif c in ")]}":
            depth -= 1
            out.append(c if depth == 0 else " ")
        else:
            out.append(c if depth == 0 else " ")
    return "".join(out)


def _statement(line: str, width: int) -> list[str] | None:
    """black's split of one indented simple statement past the limit, for the two simple cases: the
    value is one call (``x = wp.vec3(...)``, ``return f(...)``, ``wp.atomic_add(...)``): its arguments on
    one line of their own, else one a line with a trailing comma; or the value is a sum (or product)
    of three or more terms (``x = a + b - c``): in parentheses, on one line, else a term a line with
    its operator first. ``None`` otherwise (a term or an argument that would still be too long, a
    string with brackets or commas, a comparison, a single operator, ...)."""
    indent = line[: len(line) - len(line.lstrip(" "))]
    body = line[len(indent):]
    if not indent or '"' in _STRING.sub("", body) or "'" in body or "#" in body:
        return None
    top = _depth0(_STRING.sub(lambda m: "_" * len(m[0]), body))
    assigns = list(_ASSIGN.finditer(top))
    if len(assigns) > 1:
        return None
    if assigns:
        cut = assigns[0].end()
    elif body.startswith("return "):
        cut = len("return ")
    else:
        cut = 0
    head, value, value_top = body[:cut], body[cut:], top[cut:]
    inner = indent + INDENT
    if _one_call(value_top):
        return _call(indent, head, value, "", width)
    if not cut or _DEPTH0_DECLINED.search(f" {value_top} ") or "," in value_top or "=" in value_top:
        return None
    terms = _terms(value, value_top)
    if terms is None:
        return None
    if len(inner + value) <= width:
        return [indent + head + "(", inner + value, indent + ")"]
    if any(len(inner + t) > width for t in terms):
        return None
    return [indent + head + "(", *(inner + t for t in terms), indent + ")"]


def _one_call(top: str) -> bool:
    """Is the top level of a value (``_depth0``) one call of a (dotted) name?"""
    return bool(re.match(r"[A-Za-z_][\w.]*\(", top)) and top.endswith(")") and top.count("(") == 1 and "[" not in top


def _call(indent: str, head: str, value: str, tail: str, width: int) -> list[str] | None:
    """black's split of ``head + value + tail`` at the brackets of ``value``, one call: its arguments
    on one line, else one a line with a trailing comma, where an argument still too long that is
    itself one call is split the same way."""
    inner = indent + INDENT
    opening = indent + head + value[: value.index("(") + 1]
    args = value[value.index("(") + 1:-1]
    if len(opening) > width or len(indent + ")" + tail) > width or not args.strip():
        return None
    pieces = [p.strip() for p in split_commas(args)]
    magic = pieces[-1] == ""
    pieces = [p for p in pieces if p]
    if not magic and len(inner + args.strip()) <= width:
        return [opening, inner + args.strip(), indent + ")" + tail]
    if len(pieces) < 2:  # one argument too long: black splits inside it
        return None
    out = [opening]
    for p in pieces:
        if p.startswith("*"):
            return None
        if len(inner + p + ",") <= width:
            out.append(inner + p + ",")
            continue
        if '"' in p or not _one_call(_depth0(p)):
            return None
        split = _call(inner, "", p, ",", width)
        if split is None:
            return None
        out += split
    return out + [indent + ")" + tail]


def _terms(value: str, top: str) -> list[str] | None:
    """The terms of a sum of three or more (else of a product of three or more) at the top level, each
    after the first with its operator in front; ``None`` when there are fewer than two operators of
    the kind split at."""
    for ops in (("+", "-"), ("*", "/")):
        cuts = [m.start() for m in re.finditer(r" [-+*/] ", top) if top[m.start() + 1] in ops]
        if cuts:
            if len(cuts) < 2:
                return None
            starts = [0, *(c + 1 for c in cuts)]
            ends = [*cuts, len(value)]
            return [value[a:b].strip() for a, b in zip(starts, ends)]
    return None


def _signatures(tokens: list[tokenize.TokenInfo]) -> dict[int, tuple[int, str]] | None:
    """Top-level ``def`` headers: first line -> (last line, the header on one line). ``None`` when a
    header is nested or annotates its return value."""
    found: dict[int, tuple[int, str]] = {}
    for n, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string == "def":
            if tok.start[1] != 0:
                return None
            depth, parts, last = 0, [], tok
            for t in tokens[n:]:
                if t.type in (tokenize.NL, tokenize.COMMENT):
                    if t.type == tokenize.COMMENT:
                        return None
                    continue
                parts.append(t)
                if t.string in "([{" and t.type == tokenize.OP:
                    depth += 1
                elif t.string in ")]}" and t.type == tokenize.OP:
                    depth -= 1
                elif t.string == ":" and depth == 0:
                    last = t
                    break
            found[tok.start[0]] = (last.end[0], _join(parts))
    return found


def _join(parts: list[tokenize.TokenInfo]) -> str:
    """Tokens of one header as one line, spaced as they were written (line breaks made single spaces)."""
    text = ""
    for prev, tok in zip([None, *parts[:-1]], parts):
        if prev is not None and (tok.start[0] != prev.end[0] or tok.start[1] != prev.end[1]):
            opened = prev.string in "([" and prev.type == tokenize.OP
            closing = tok.string in ")]" and tok.type == tokenize.OP
            if not (opened or closing):
                text += " "
        text += tok.string
    return text


def _signature(header: str, width: int) -> list[str] | None:
    """black's layout of ``def name(params):``: one line; the parameters on one indented line; or one
    parameter a line with a trailing comma (always so when the parameters end with a comma)."""
    m = re.fullmatch(r"(def \w+)\((.*)\)( -> [\w.]+)?:", header)
    if m is None or not _balanced(m[2]):  # the brackets matched must be the parameters'
        return None
    params = _split(m[2])
    if params is None:
        return None
    magic = bool(params) and params[-1] == ""
    params = [p for p in params if p]
    tail = f"){m[3] or ''}:"
    one = f"{m[1]}({', '.join(params)}{tail}"
    if not magic and len(one) <= width:
        return [one]
    inner = INDENT + ", ".join(params)
    if not magic and len(params) > 1 and len(inner) <= width:  # black gives one parameter its comma
        return [f"{m[1]}(", inner, tail]
    if any(len(INDENT + p + ",") > width for p in params) or len(tail) > width:
        return None
    return [f"{m[1]}(", *(INDENT + p + "," for p in params), tail]


def split_commas(text: str) -> list[str]:
    """``text`` cut at the commas outside any brackets, pieces as written (``"a, f(b, c)"`` ->
    ``["a", " f(b, c)"]``); a trailing comma gives a last empty piece."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _split(params: str) -> list[str] | None:
    """Parameters, stripped (a trailing comma gives a last ``""``); ``None`` when a string or a
    comment is among them."""
    if any(c in params for c in "\"'#"):
        return None
    out = [p.strip() for p in split_commas(params)]
    return [] if out == [""] else out


def _tokens_plain(tokens: list[tokenize.TokenInfo], signatures: dict[int, tuple[int, str]]) -> bool:
    """No token black would write otherwise, outside the signatures it lays out here."""
    in_sig = {r for start, (end, _) in signatures.items() for r in range(start, end + 1)}
    brackets: list[str] = []
    for n, tok in enumerate(tokens):
        row = tok.start[0]
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                brackets.append(tok.string)
                if tok.string == "(" and n > 0 and _redundant(tokens, n):
                    return False
            elif tok.string in ")]}":
                brackets.pop()
            elif tok.string in ("**", ";", "**=", ":=", "\\"):
                return False
            elif tok.string == ":" and brackets and brackets[-1] == "[":
                return False  # a slice: black spaces complex bounds
        elif tok.type == tokenize.NL and brackets and row not in in_sig:
            return False  # a bracketed expression over several lines
        elif tok.type == tokenize.STRING:
            body = tok.string.lstrip("rRbBuUfF")
            if not body.startswith('"') or tok.string[:1] in "RBUFu":
                return False
            if '\\"' in body or body.startswith('"""') and not _docstring_plain(body, tok.start[1]):
                return False
        elif tok.type == tokenize.NUMBER:
            if not _NUMBER.fullmatch(tok.string):
                return False
        elif tok.type == tokenize.COMMENT:
            line = tok.line
            if not (tok.string.startswith("# ") or tok.string == "#"):
                return False
            if tok.start[1] > 0 and line[: tok.start[1]].strip():
                if not line[: tok.start[1]].endswith("  ") or line[: tok.start[1] - 2].endswith(" "):
                    return False
            elif row in in_sig or not _comment_indent_kept(tokens, n):
                return False
        elif tok.type == _FSTRING:
            return False
    return True


def _redundant(tokens: list[tokenize.TokenInfo], n: int) -> bool:
    """An opening parenthesis right after a keyword or ``=`` whose pair closes the line: black may
    drop the pair."""
    prev = tokens[n - 1]
    if not (prev.string in _OPENING or prev.string == "for"):
        return False
    depth = 0
    for k in range(n, len(tokens)):
        tok = tokens[k]
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0:
                after = tokens[k + 1]
                return after.type in (tokenize.NEWLINE, tokenize.COMMENT) or after.string == ":"
    return True


def _cut_blank_runs(lines: list[str]) -> list[str]:
    """``lines`` with runs of blank lines at the top level cut as black cuts them: to two, to one
    between the imports and a statement."""
    lines = list(lines)
    i = 0
    while i < len(lines):
        if i == 0 or lines[i].strip():
            i += 1
            continue
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        keep = 2
        if lines[i - 1].startswith(("import ", "from ")) and not (_TOP.match(lines[j]) or lines[j].startswith("#")):
            keep = 1  # black leaves one blank line between the imports and a statement
        if j - i > keep and not lines[j].startswith(" "):
            del lines[i + keep:j]
            j = i + keep
        i = j
    return lines


def _blank_lines_kept(lines: list[str]) -> bool:
    """Blank lines where black leaves them: two before a top-level block, its comments and
    decorators, and after it; none opening a block or after a decorator; at most one inside a block;
    between other top-level statements, the author's zero to two (one at least after the imports)."""
    for k in range(1, len(lines)):
        line = lines[k]
        if not line.strip():
            continue
        run = 0
        while not lines[k - 1 - run].strip():
            run += 1
        before = lines[k - 1 - run]
        if line.startswith(" ") or line.startswith(")"):  # inside a block, or closing a signature
            if run and (run > 1 or before.rstrip().endswith(":") or before.startswith("@")):
                return False
            continue
        if before.startswith("@") and run == 0:
            continue
        block = bool(_TOP.match(line)) or line.startswith("#") or before.startswith((" ", ")"))
        if block and run != 2 and not (before.startswith("#") and run == 0 and not line.startswith("#")):
            return False
        if before.startswith(("import ", "from ")) and not line.startswith(("import ", "from ")) and run == 0:
            return False
    return True


def _comment_indent_kept(tokens: list[tokenize.TokenInfo], n: int) -> bool:
    """A comment on its own line indented as the next line of code is (black moves it otherwise)."""
    for tok in tokens[n + 1:]:
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        return tok.start[1] == tokens[n].start[1]
    return tokens[n].start[1] == 0


def _docstring_plain(body: str, column: int) -> bool:
    """A triple-quoted string black leaves as it is: no space just inside its quotes, no backslash
    at a line end, no quote before the closing ones, no blank line before them, and lines after the
    first indented as the quotes are (black re-indents them), the closing quotes too."""
    inner = body[3:-3]
    lines = inner.split("\n")
    last = lines[-1]
    if inner[:1] in (" ", "\t") or (last.strip() and last.endswith(" ")) or inner.endswith('"') or "\\\n" in inner:
        return False
    if len(lines) == 1:
        return True
    if "\n" not in inner.rstrip():  # one line of text, the quotes below it: black joins them
        return False
    if last.strip() == "" and (last != " " * column or not lines[-2].strip()):
        return False
    rest = [line for line in lines[1:] if line.strip()]
    return all(line.startswith(" " * column) for line in rest) and (
        not rest or min(len(line) - len(line.lstrip(" ")) for line in rest) == column)
