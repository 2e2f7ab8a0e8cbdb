"""The quick layout gives black's output or declines: on generated modules of every source, on
hand-made modules with what black changes, and on the texts it must leave to black."""

from __future__ import annotations

import black
import pytest

from jit.code.synthesis import layout, quick_layout
from jit.code.synthesis.generator import generate

WIDTH = layout.LINE_LENGTH


def by_black(text: str) -> str:
    return black.format_str(text, mode=layout._mode())


def test_generated_modules_are_laid_out_as_black_lays_them_out(monkeypatch):
    """Every text the generator formats, for 120 kernels of the default mix (patterns, composed
    kernels, mutants, the random source): the quick layout is black's, or it declines."""
    seen: list[str] = []
    formatted = layout.format_source

    def spy(text: str) -> str:
        seen.append(text)
        return formatted(text)

    from jit.code.synthesis import generator
    from jit.code.synthesis.mutate import source
    from jit.code.synthesis.pieces import draft

    for module in (generator, source, draft):
        monkeypatch.setattr(module, "format_source", spy)
    layout._formatted.clear()
    sources = {generate(11, i).metadata["source"] for i in range(120)}
    assert {"patterns", "composed", "mutants"} <= sources
    quick = [(text, quick_layout.laid_out(text, WIDTH)) for text in seen]
    laid = [(text, out) for text, out in quick if out is not None]
    assert len(laid) >= 0.6 * len(seen)  # most are simple: the point of it
    for text, out in laid:
        assert out == by_black(text), text


CHANGED = {
    "a long signature, wrapped": "import warp as wp\n\n\n@wp.kernel\ndef k(" + ", ".join(
        f"array_number_{i}: wp.array(dtype=wp.vec3)" for i in range(3)) + "):\n    i = wp.tid()\n",
    "a longer one, one parameter a line": "import warp as wp\n\n\n@wp.kernel\ndef k(" + ", ".join(
        f"array_number_{i}: wp.array(dtype=wp.vec3)" for i in range(6)) + "):\n    i = wp.tid()\n",
    "a wrapped one that fits, joined": "import warp as wp\n\n\n@wp.kernel\ndef k(\n    a: float, b: float\n):\n"
                                       "    i = wp.tid()\n",
    "a trailing comma keeps it exploded": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float, b: float,):\n"
                                          "    i = wp.tid()\n",
    "blank lines after the imports": "import warp as wp\n\n\n\n\n@wp.kernel\ndef k(a: float):\n    i = wp.tid()\n",
    "one before a constant": "import warp as wp\n\n\nN = wp.constant(3)\n\n\n@wp.kernel\ndef k(a: float):\n"
                             "    i = wp.tid()\n",
    "leading blank lines": "\n\nimport warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    i = wp.tid()\n",
    "a return annotation": "import warp as wp\n\n\n@wp.func\ndef f(" + ", ".join(
        f"value_number_{i}: float" for i in range(9)) + ") -> float:\n    return 1.0\n",
    "one long parameter, given its comma": "import warp as wp\n\n\n@wp.kernel\ndef k(" + "a" * 108 + ": float):\n"
                                           "    i = wp.tid()\n",
    "a long call, its arguments on a line": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n"
                                            "    velocity = wp.vec3(" + ", ".join(["a * 2.0 + 1.0"] * 8) + ")\n",
    "a longer call, an argument a line": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n"
                                         "    total = wp.vec3(" + ", ".join(["wp.sin(a) * 2.0 + wp.cos(a)"] * 4) + ")\n",
    "a call in a call, split again": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    v = wp.vec2(" + ", ".join(
        "wp.max(" + ", ".join([f"a * {i}.0 + wp.sin(a)"] * 5) + ")" for i in range(2)) + ")\n",
    "a long call as a statement": "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n"
                                  "    wp.atomic_add(a, 0, " + " + ".join(["wp.sin(a[1])"] * 7) + ")\n",
    "a long return": "import warp as wp\n\n\n@wp.func\ndef f(a: float):\n    return wp.min(" + ", ".join(
        ["a * a + 1.0"] * 8) + ")\n",
    "a long sum, in parentheses": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = " + " + ".join(
        ["wp.sin(a)"] * 11) + "\n",
    "a longer sum, a term a line": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = " + " - ".join(
        ["wp.sin(a) * 2.0"] * 12) + "\n",
    "a long product": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = " + " * ".join(
        ["wp.sin(a + 1.0)"] * 7) + "\n",
}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_what_it_changes_it_changes_as_black_does(name):
    text = CHANGED[name]
    out = quick_layout.laid_out(text, WIDTH)
    assert out is not None and out == by_black(text) and out != text


def test_a_docstring_line_past_the_limit_is_kept_as_black_keeps_it():
    text = ("import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    \"\"\"" + " ".join(["word"] * 30)
            + "\n    more.\n    \"\"\"\n    b = wp.vec3(" + ", ".join(["a * 3.0"] * 12) + ")\n")
    out = quick_layout.laid_out(text, WIDTH)
    assert out is not None and out == by_black(text) and out.count("\n") == text.count("\n") + 2


DECLINED = {
    "single quotes": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    s = 'x'\n",
    "a power": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = a ** 2.0\n",
    "a slice": "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    b = a[1 : 2]\n",
    "an expression over two lines": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = wp.vec2(\n"
                                    "        a, a)\n",
    "a long body line with a comparison": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = " + " and ".join(
        ["a < 1.0"] * 14) + "\n",
    "a long sum with a term too long": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = a + a + wp.max(" + ", ".join(
        ["a * 3.0"] * 14) + ")\n",
    "a long line with one operator": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = wp.max(" + ", ".join(
        ["a * 3.0"] * 7) + ") * wp.min(" + ", ".join(["a * 3.0"] * 7) + ")\n",
    "one argument too long": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = wp.sin(" + " + ".join(
        ["a * 3.0"] * 14) + ")\n",
    "a long line with a comment": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = wp.vec3(" + ", ".join(
        ["a * 3.0"] * 12) + ")  # note\n",
    "a long docstring's last line": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    \"\"\"Text.\n    " + " ".join(["word"] * 30)
                                    + "\"\"\"\n    i = wp.tid()\n",
    "a redundant pair of parentheses": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = (a + a)\n",
    "one blank line before a kernel": "import warp as wp\n\n@wp.kernel\ndef k(a: float):\n    i = wp.tid()\n",
    "a blank line opening a body": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n\n    i = wp.tid()\n",
    "a comment without its space": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    #note\n    i = wp.tid()\n",
    "an upper-case exponent": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    b = a * 1E-6\n",
    "trailing white space": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    i = wp.tid()  \n",
    "a blank line closing a docstring": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n"
                                        '    """Text.\n\n    """\n    i = wp.tid()\n',
    "a one-line docstring closed below": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n"
                                         '    """Text.\n    """\n    i = wp.tid()\n',
    "a docstring indented deeper": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n"
                                   '    """Text.\n      more\n    """\n    i = wp.tid()\n',
    "a u prefix": "import warp as wp\n\n\n@wp.kernel\ndef k(a: float):\n    s = u\"x\"\n",
    "a return annotation with brackets": "import warp as wp\n\n\n@wp.func\ndef f(" + ", ".join(
        f"value_number_{i}: float" for i in range(9)) + ") -> wp.vec(3, float):\n    return 1.0\n",
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_what_black_might_change_otherwise_is_left_to_black(name):
    assert quick_layout.laid_out(DECLINED[name], WIDTH) is None


def test_format_source_gives_black_layout_either_way():
    for text in (*CHANGED.values(), *DECLINED.values()):
        assert layout.format_source(text) == by_black(text)
