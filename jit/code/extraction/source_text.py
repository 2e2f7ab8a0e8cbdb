"""The Python text that rebuilds one live Warp kernel on its own: ``self_contained_source``.

The text is ``import warp as wp`` and the other imports the code needs, the module-level
values the kernel and its helpers read (literals, ``wp.constant`` values, Warp types), the
``@wp.struct`` classes and ``@wp.func`` helpers they use (callees first, every overload),
then the kernel, and for a concrete instance of a generic kernel the ``wp.overload`` that
makes it. Executed in a fresh module it defines the kernel under its Warp key (the record's
``kernel_name``), and Warp generates the same code for it as for the original.

Function and kernel bodies are copied verbatim, decorators included: Warp hashes the source
text into the generated names, so any edit would change the code. For the same reason a
kernel or helper made inside a factory is rebuilt inside a function of the same qualified
name, whose parameters are the closure variables it reads, called with their values; structs
are written from their fields, which is all Warp reads of them.

What it leaves out: deciding whether the text compiles (the caller rebuilds it), and any
value it cannot write as Python text (arrays, objects, functions of other modules reached
through a module attribute). Those make the text incomplete, and the second item of the
result says why; the text is still the best attempt, useful to a reader.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
import os
import re
import sys
import textwrap
import types as pytypes
import typing

import numpy as np

from jit.code.extraction import warp_backend as wb

# modules a rebuilt text may import: they come with any Python that runs Warp
_IMPORTABLE_ROOTS = {"warp", "numpy", "math", "typing", "builtins", "functools", "operator", "ctypes", "enum"}
_MAX_ARRAY_ELEMENTS = 256


class _Unrenderable(Exception):
    """A value with no Python text that rebuilds it."""


def self_contained_source(kernel) -> tuple[str, str | None]:
    """(text, None) if ``text`` rebuilds ``kernel`` alone, else (best attempt, why not)."""
    text = _Text()
    text.add_kernel(kernel)
    return text.render(), ("; ".join(dict.fromkeys(text.problems)) or None)


class _Text:
    """The pieces of one self-contained source, in the order they must run."""

    def __init__(self):
        self.imports: dict[str, str] = {"wp": "import warp as wp"}
        self.blocks: list[str] = []
        self.bound: dict[str, object] = {"wp": ("module", "warp")}  # module-level name -> identity
        self.emitted: dict[int, str] = {}  # id(Warp object) -> a module-level name bound to it
        self.keep: list = []  # objects whose id() is used above stay alive while we run
        self.in_progress: set[int] = set()
        self.problems: list[str] = []

    def render(self) -> str:
        head = "\n".join(self.imports.values())
        return "\n\n".join([head, *self.blocks]).rstrip("\n") + "\n"

    # -- names ---------------------------------------------------------------------------------

    def bind(self, name: str, identity, line: str | None) -> bool:
        """Bind ``name`` at module level (``line`` is the statement, None if already written)."""
        if name in self.bound:
            if self.bound[name] == identity:
                return True
            self.problems.append(f"name clash: {name!r} means two different things")
            return False
        self.bound[name] = identity
        if line is not None:
            self.blocks.append(line)
        return True

    def fresh(self, base: str) -> str:
        name, i = base, 1
        while name in self.bound or name in self.imports:
            name, i = f"{base}_{i}", i + 1
        return name

    def provide(self, name: str, value, where: str) -> None:
        """Make module-level ``name`` hold ``value`` (a name a body or annotation reads)."""
        if isinstance(value, pytypes.ModuleType):
            self.add_import(name, value, where)
        elif wb.is_user_function(value) or wb.is_struct(value):
            obj_name = self.add_object(value)
            if obj_name is not None and obj_name != name:
                self.bind(name, ("obj", id(value)), f"{name} = {obj_name}")
        elif wb.is_kernel(value):
            self.problems.append(f"{where} reads kernel {name!r}")
        else:
            try:
                expr = self.render_value(value)
            except _Unrenderable as exc:
                self.problems.append(f"{where} reads {name!r}, {exc}")
                return
            self.bind(name, ("value", expr), f"{name} = {expr}")

    def add_import(self, name: str, module, where: str) -> None:
        full = module.__name__
        if full.split(".")[0] not in _IMPORTABLE_ROOTS and full not in sys.stdlib_module_names:
            self.problems.append(f"{where} uses module {full} ({name!r}): not inlined")
        line = f"import {full}" if name == full else f"import {full} as {name}"
        if "." in name:  # cannot happen for a plain Name; keep the guard for odd globals
            self.problems.append(f"{where} uses module {full} under {name!r}")
            return
        if self.bound.get(name, ("module", full)) != ("module", full):
            self.problems.append(f"name clash: {name!r} is module {full} and something else")
            return
        self.bound[name] = ("module", full)
        self.imports.setdefault(name, line)

    # -- values --------------------------------------------------------------------------------

    def render_value(self, value) -> str:
        """Python text for a literal, a Warp value or type, or a small NumPy array."""
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                return f'float("{value}")'
            return repr(value)
        if isinstance(value, (tuple, list)):
            items = ", ".join(self.render_value(v) for v in value)
            return f"({items},)" if isinstance(value, tuple) and len(value) == 1 else (
                f"({items})" if isinstance(value, tuple) else f"[{items}]")
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.render_value(k)}: {self.render_value(v)}" for k, v in value.items()) + "}"
        if isinstance(value, type) or wb.is_struct(value) or wb.is_array_type(value) or value is typing.Any:
            return self.render_type(value)
        if wb.is_builtin_function(value):
            return self.wp_name(value, wb.builtin_key(value))
        if isinstance(value, np.generic):
            self.imports.setdefault("np", "import numpy as np")
            self.bound.setdefault("np", ("module", "numpy"))
            return f"np.{type(value).__name__}({self.render_value(value.item())})"
        if isinstance(value, np.ndarray):
            if value.size > _MAX_ARRAY_ELEMENTS or value.dtype.kind not in "biuf":
                raise _Unrenderable(f"a NumPy array of {value.size} {value.dtype} values")
            self.imports.setdefault("np", "import numpy as np")
            self.bound.setdefault("np", ("module", "numpy"))
            return f"np.array({value.tolist()!r}, dtype=np.{value.dtype.name})"
        if wb.is_warp_value(value):  # vectors, matrices, Warp scalars
            t = self.render_type(type(value))
            return f"{t}({', '.join(self.render_value(v) for v in wb.flat_components(value))})"
        raise _Unrenderable(f"a {type(value).__module__}.{type(value).__qualname__} object")

    def render_type(self, t) -> str:
        if t in (int, float, bool):
            return t.__name__
        if isinstance(t, type) and issubclass(t, np.generic):
            self.imports.setdefault("np", "import numpy as np")
            self.bound.setdefault("np", ("module", "numpy"))
            return f"np.{t.__name__}"
        if t is typing.Any:
            self.imports.setdefault("Any", "from typing import Any")
            self.bound.setdefault("Any", ("value", "Any"))
            return "Any"
        if wb.is_struct(t):
            name = self.add_object(t)
            if name is None:
                raise _Unrenderable(f"struct {t.key} that cannot be written")
            return name
        if wb.is_array_type(t):
            kind, dtype, ndim = wb.array_type_parts(t)
            return f"wp.{kind}(dtype={self.render_type(dtype)}, ndim={ndim})"
        name = getattr(t, "__name__", None)
        if name and getattr(__import__("warp"), name, None) is t:
            return f"wp.{name}"
        parts = wb.composite_type_parts(t)  # vector / matrix / quaternion / transformation
        if parts is not None:
            kind, shape, scalar = parts
            scalar_text = self.render_type(scalar)
            if kind == "vector":
                return f"wp.types.vector(length={shape[0]}, dtype={scalar_text})"
            if kind == "matrix":
                return f"wp.types.matrix(shape={tuple(shape)!r}, dtype={scalar_text})"
            return f"wp.types.{kind}(dtype={scalar_text})"
        raise _Unrenderable(f"type {wb.type_name(t) if name is None else name}")

    def wp_name(self, value, key: str) -> str:
        if getattr(__import__("warp"), key, None) is value:
            return f"wp.{key}"
        raise _Unrenderable(f"Warp builtin {key} not reachable as wp.{key}")

    # -- Warp objects --------------------------------------------------------------------------

    def add_object(self, obj) -> str | None:
        """Write a struct or user function (all overloads) once; a module-level name bound to it."""
        if id(obj) in self.emitted:
            return self.emitted[id(obj)]
        if id(obj) in self.in_progress:  # recursion: the name will exist once the definition runs
            return wb.python_name(obj)
        self.in_progress.add(id(obj))
        self.keep.append(obj)
        try:
            if wb.is_struct(obj):
                name = self.add_struct(obj)
            else:
                name = None
                for overload in wb.function_overloads(obj):
                    name = self.add_definition(overload, wb.python_source(overload), obj) or name
                for extra in wb.custom_gradients(obj):
                    self.add_definition(extra, wb.python_source(extra), extra)
        finally:
            self.in_progress.discard(id(obj))
        if name is not None:
            self.emitted[id(obj)] = name
        return name

    def add_struct(self, struct) -> str | None:
        fields = []
        for label, t in wb.struct_fields(struct):
            try:
                fields.append(f"    {label}: {self.render_type(t)}")
            except _Unrenderable as exc:
                self.problems.append(f"struct {struct.key} field {label}: {exc}")
                return None
        cls = wb.struct_class(struct)
        body = "@wp.struct\nclass {}:\n".format(cls.__name__) + ("\n".join(fields) or "    pass")
        return self.add_block(body, cls.__name__, cls.__qualname__, {}, struct, f"struct {struct.key}")

    def add_kernel(self, kernel) -> None:
        parent = wb.generic_parent(kernel)
        target = parent if parent is not None else kernel
        if parent is None and wb.is_generic(kernel):
            self.problems.append(f"generic kernel {kernel.key} without concrete argument types: needs an overload")
        self.keep.append(target)
        self.add_module_options(target)
        name = self.add_definition(target, wb.python_source(target), target)
        if name is None:
            return
        if parent is not None:
            try:
                self.blocks.append(f"wp.overload({name}, {self.overload_types(kernel, parent)})")
            except _Unrenderable as exc:
                self.problems.append(f"overload {wb.overload_signature(kernel)}: {exc}")
        if name != kernel.key:
            self.bind(kernel.key, ("obj", id(target)), f"{kernel.key} = {name}")

    def add_module_options(self, kernel) -> None:
        """``wp.set_module_options`` for what the kernel's module changed (e.g. enable_backward)."""
        module = wb.kernel_module(kernel)
        if module.name != wb.python_function(kernel).__module__:  # module="unique": the decorator says it
            return
        changes = wb.module_option_changes(module)
        if changes:
            try:
                self.blocks.append(f"wp.set_module_options({self.render_value(changes)})")
            except _Unrenderable as exc:
                self.problems.append(f"module options: {exc}")

    def overload_types(self, kernel, parent) -> str:
        generic = {label for label, t in wb.argument_type_objects(parent) if wb.type_is_generic(t)}
        items = [f"{label!r}: {self.render_type(t)}" for label, t in wb.argument_type_objects(kernel)
                 if label in generic]
        return "{" + ", ".join(items) + "}"

    def add_definition(self, obj, source: str, identity) -> str | None:
        """Write a kernel's or function's verbatim source, with the names it reads defined first."""
        func = wb.python_function(obj)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            self.problems.append(f"{obj.key}: source does not parse")
            return None
        node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
        if node is None:
            self.problems.append(f"{obj.key}: no function definition in its source")
            return None
        closure = _closure_values(func)
        params: dict[str, object] = {}
        for name in _body_names(node, func):
            if name in closure:
                if closure[name] is _EMPTY:
                    self.problems.append(f"{obj.key}: closure variable {name!r} is not set")
                else:
                    params[name] = closure[name]
            elif name in func.__globals__:
                self.provide(name, func.__globals__[name], obj.key)
            elif not hasattr(builtins, name):
                self.problems.append(f"{obj.key}: reads undefined name {name!r}")
        annotations = _annotation_values(node, func)
        module_level = "<locals>" not in func.__qualname__
        for name in _outer_names(node):
            # a builtin's name counts when the annotation saw another value (a factory's `type`
            # parameter); float, int and bool are the builtins Warp itself turns into its types
            if name in annotations and (not hasattr(builtins, name) or (
                    name not in ("float", "int", "bool") and annotations[name] is not getattr(builtins, name))):
                # the value the annotation had when Python evaluated it, whatever the name holds now
                if module_level:
                    self.provide(name, annotations[name], obj.key)
                else:
                    params.setdefault(name, annotations[name])
            elif name in func.__globals__:
                self.provide(name, func.__globals__[name], obj.key)
            elif name in closure and closure[name] is not _EMPTY:
                params.setdefault(name, closure[name])
            elif hasattr(builtins, name):
                continue
            else:
                self.problems.append(f"{obj.key}: decorator or annotation reads {name!r} of its enclosing function")
        text = source.rstrip("\n")
        if wb.is_kernel(obj) and not node.decorator_list:  # made by wp.Kernel(func, key=..., options=...)
            text += f"\n\n{func.__name__} = wp.Kernel({func.__name__}, key={obj.key!r}, options={obj.options!r})"
        return self.add_block(text, func.__name__, func.__qualname__, params, identity, obj.key)

    def add_block(self, text: str, name: str, qualname: str, params: dict, identity, label: str) -> str | None:
        """Emit a definition at module level, or inside functions that give it its qualified name."""
        scopes = qualname.split(".")[:-1]
        if not scopes:
            if params:  # a module-level definition with closure values: cannot happen in Python
                self.problems.append(f"{label}: closure variables {sorted(params)} at module level")
            if not self.bind(name, ("obj", id(identity)), None):
                return None
            self.blocks.append(text)
            return name
        if any(s.startswith("<") and s != "<locals>" for s in scopes):
            self.problems.append(f"{label}: defined inside {qualname!r}")
            return None
        has_function = "<locals>" in scopes
        if params and not has_function:
            self.problems.append(f"{label}: closure variables {sorted(params)} inside a class body")
        args = ", ".join(f"{key}={self.argument(key, value, label)}" for key, value in params.items())
        wrapper, call = _nested(scopes, list(params), text, name)
        top = scopes[0]
        if self.bound.setdefault(top, ("wrapper", top)) != ("wrapper", top):
            self.problems.append(f"name clash: {top!r} is needed for the scope of {label}")
            return None
        target = self.fresh(name)
        self.blocks.append(wrapper)
        self.bind(target, ("obj", id(identity)), f"{target} = {call.replace('{args}', args)}")
        return target

    def argument(self, name: str, value, label: str) -> str:
        """Text for a closure value passed to a wrapper: a literal, or a module-level name."""
        if isinstance(value, pytypes.ModuleType):
            self.add_import(name, value, label)
            return name
        if wb.is_user_function(value) or wb.is_struct(value):
            return self.add_object(value) or "None"
        if wb.is_kernel(value):
            self.problems.append(f"{label}: closure variable {name!r} is a kernel")
            return "None"
        try:
            return self.render_value(value)
        except _Unrenderable as exc:
            self.problems.append(f"{label}: closure variable {name!r} is {exc}")
            return "None"


# ---------------------------------------------------------------------------------------------
# reading a function's names


_EMPTY = object()


def _closure_values(func) -> dict[str, object]:
    out = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            out[name] = _EMPTY
    return out


def _code_names(code) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):  # lambdas and comprehensions inside wp.static(...)
            names |= _code_names(const)
    return names


def _body_names(node: ast.FunctionDef, func) -> list[str]:
    """Global and closure names the body reads, in order of appearance (Python's own analysis)."""
    code = func.__code__
    free = _code_names(code) - set(code.co_varnames)  # co_names also lists attribute names
    seen = []
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and sub.id in free and sub.id not in seen:
                seen.append(sub.id)
    return seen


def _outer_names(node: ast.FunctionDef) -> list[str]:
    """Names the decorators and annotations read: the enclosing scope evaluates them."""
    exprs = [*node.decorator_list, node.returns]
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            exprs.append(arg.annotation)
    exprs += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
    seen = []
    for expr in exprs:
        if expr is None:
            continue
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Name) and sub.id not in seen:
                seen.append(sub.id)
    return seen


def _annotation_values(node: ast.FunctionDef, func) -> dict[str, object]:
    """Names in annotations matched to the values Python evaluated: ``a: wp.array(dtype=T)`` -> T."""
    evaluated = getattr(func, "__annotations__", {}) or {}
    out: dict[str, object] = {}
    for arg in node.args.args:
        if arg.annotation is not None and arg.arg in evaluated and not isinstance(evaluated[arg.arg], str):
            _match(arg.annotation, evaluated[arg.arg], out)
    return out


def _match(node: ast.AST, value, out: dict) -> None:
    if isinstance(node, ast.Name):
        out.setdefault(node.id, value)
    elif isinstance(node, ast.Call) and wb.is_array_type(value):
        _, dtype, _ = wb.array_type_parts(value)
        for kw in node.keywords:
            if kw.arg == "dtype":
                _match(kw.value, dtype, out)
        if node.args:
            _match(node.args[0], dtype, out)
    elif isinstance(node, ast.Subscript) and wb.is_array_type(value):
        _match(node.slice, wb.array_type_parts(value)[1], out)
    elif isinstance(node, ast.Call):
        parts = wb.composite_type_parts(value)
        if parts is not None:
            for kw in node.keywords:
                if kw.arg == "dtype":
                    _match(kw.value, parts[2], out)


def _nested(scopes: list[str], params: list[str], text: str, name: str) -> tuple[str, str]:
    """Functions and classes named after ``scopes`` around ``text``: (source, call expression).

    ``make.<locals>.k`` becomes ``def make(<params>): <text> return k``, called as
    ``make(<args>)``; a class in the path becomes a class (with a static method inside), read
    as an attribute. The innermost function takes the closure values; the call expression
    keeps ``{args}`` where they go.
    """
    frames = [("def" if i + 1 < len(scopes) and scopes[i + 1] == "<locals>" else "class", part)
              for i, part in enumerate(scopes) if part != "<locals>"]
    innermost = max((i for i, (kind, _) in enumerate(frames) if kind == "def"), default=None)
    return _frame_source(frames, 0, innermost, params, text, name), _frame_call(frames, innermost, name)


def _frame_source(frames, i, innermost, params, text, name) -> str:
    kind, part = frames[i]
    if i + 1 < len(frames):
        child = _frame_source(frames, i + 1, innermost, params, text, name)
        if kind == "class" and frames[i + 1][0] == "def":
            child = "@staticmethod\n" + child
        inner = child + (f"\nreturn {frames[i + 1][1]}" if kind == "def" else "")
    else:
        inner = text + (f"\nreturn {name}" if kind == "def" else "")
    if kind == "def":
        args = ", ".join(params) if i == innermost else ""
        return f"def {part}({args}):\n" + textwrap.indent(inner, "    ")
    return f"class {part}:\n" + textwrap.indent(inner, "    ")


def _frame_call(frames, innermost, name) -> str:
    expr = frames[0][1]
    for i, (kind, _) in enumerate(frames):
        following = frames[i + 1][1] if i + 1 < len(frames) else name
        if kind == "def":
            expr += "({args})" if i == innermost else "()"
        else:
            expr += f".{following}"
    return expr


_LINE_COMMENT = re.compile(r"<L \d+>$", re.MULTILINE)
_LINE_DIRECTIVE = re.compile(r'^#line \d+ ".*"$', re.MULTILINE)
_FILE_COMMENT = re.compile(r"^// \S.*:\d+$", re.MULTILINE)  # "// /path/file.py:46" above a helper


def comparable_code(code: str, native_names: list[str]) -> str:
    """Generated code without what depends on where and after what the source was defined.

    Warp's ``// <python line>  <L n>`` comments, the ``// file:line`` line above each helper
    (and ``#line`` directives) name the file the source came from, and a helper's C++ name is
    numbered by how many times its key was defined earlier in the process. ``native_names``
    are the helpers' C++ names in call order (``FunctionIR.native_name``); they become
    ``<func i>``, also inside their adjoints' names. Nothing else changes.
    """
    code = _LINE_DIRECTIVE.sub("#line", _LINE_COMMENT.sub("<L>", code))
    code = _FILE_COMMENT.sub("// <file>", code)
    for i, name in enumerate(sorted(set(native_names), key=native_names.index)):
        code = re.sub(rf"(?<![A-Za-z0-9_])(adj_|replay_)?{re.escape(name)}\b", rf"\g<1><func {i}>", code)
    return code


_rebuilds = itertools.count()


def rebuild_difference(kernel, text: str, device: str = "cpu", original=None, backward: bool = True) -> str | None:
    """None if ``text`` alone rebuilds ``kernel`` with the same code on ``device``, else why not.

    The text runs in a fresh module; its kernel is the one bound to the original's key (for a
    generic overload: that kernel's single overload). Both are extracted with the module
    options of their own module and compared with ``comparable_code``.
    """
    from jit.code.extraction.ir_extractor import ExtractionError, extract_many

    if original is None:  # else the original's KernelIR for ``device``, extracted with ``backward``
        try:
            original = extract_many([kernel], (device,), backward=backward)[0][device]
        except ExtractionError as exc:
            return f"original does not extract: {exc.reason.splitlines()[0][:200]}"
    name = f"jit_synth_rebuild_{os.getpid()}_{next(_rebuilds)}"
    try:
        handle, names = wb.define_one(text, name)
    except Exception as exc:
        first = str(exc).splitlines()[0].replace(f"<jit-synth:{name}:0>", "<rebuilt text>") if str(exc) else ""
        return f"text does not run: {type(exc).__name__}: {first[:200]}"
    try:
        rebuilt = names.get(kernel.key)
        if not wb.is_kernel(rebuilt):
            return f"text does not define kernel {kernel.key}"
        if wb.overload_signature(kernel) is not None:
            overloads = wb.kernel_overloads(rebuilt)
            if len(overloads) != 1:
                return f"text registers {len(overloads)} overloads"
            rebuilt = overloads[0]
        try:
            again = extract_many([rebuilt], (device,), backward=backward)[0][device]
        except ExtractionError as exc:
            # the message names the rebuilt module, whose name holds this process's id: not kept
            reason = exc.reason.splitlines()[0].replace(f"<jit-synth:{name}:0>", "<rebuilt text>")
            return f"rebuilt kernel does not extract: {reason[:200]}"
        before = comparable_code(_full(original), [f.native_name for f in original.functions])
        after = comparable_code(_full(again), [f.native_name for f in again.functions])
        return None if before == after else "rebuilt code differs"
    except Exception as exc:  # Warp's own errors while building the rebuilt kernel
        return f"rebuilt kernel does not build: {type(exc).__name__}"
    finally:
        handle.release()


def _full(ir) -> str:
    return "\n".join([ir.args_struct, ir.forward, ir.backward or "", *(f.forward for f in ir.functions),
                      *(f.adjoint or "" for f in ir.functions), *(text for _, text in ir.structs)])
