"""The package's imports run down its map, never up, and form no cycle.

Every ``import`` of a ``jit`` module is read from the source (module level and inside functions
alike) and each module is placed on a layer of the map; an import may only reach its own layer
or a lower one, and the import graph must have no cycle. The engine imports no source, no
synthesis and no Warp.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# top to bottom; a module is on the first layer whose prefix it starts with
LAYERS = [
    ("scripts", ("jit.cli", "jit.code.synthesis.pipeline")),
    ("commands", ("jit.code.commands",)),
    ("sources", ("jit.code.synthesis.batch_generator", "jit.code.harvest")),
    ("synthesis", ("jit.code.synthesis",)),
    ("export and report", ("jit.code.export", "jit.code.report", "jit.code.evaluation")),
    ("checks", ("jit.code.checks",)),
    ("engine", ("jit.code.engine",)),
    ("analysis", ("jit.code.analysis",)),
    ("extraction", ("jit.code.extraction",)),
    ("records", ("jit.code.records",)),
]


def layer(module: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is on no layer of the map: add it to LAYERS")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    files = [p for p in (ROOT / "jit" / "code").rglob("*.py") if "examples" not in p.parts
             and p != ROOT / "jit" / "code" / "__init__.py"]
    return {module_name(p): p for p in [*files, ROOT / "jit" / "cli.py"]}


def imports(path: Path, known: set[str]) -> set[str]:
    """The package modules (and ``warp``) a file imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pkg import mod`` imports the module; ``from pkg import name`` the package's face
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                     for a in node.names]
        else:
            continue
        for name in names:
            if name == "warp" or name.startswith("warp."):
                found.add("warp")
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


GRAPH = {name: imports(path, set(package_modules())) - {name} for name, path in package_modules().items()}


def test_every_module_is_on_the_map():
    for name in GRAPH:
        layer(name)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_run_down_the_map(name):
    up = [target for target in GRAPH[name] if target != "warp" and layer(target) < layer(name)]
    assert not up, f"{name} ({LAYERS[layer(name)][0]}) imports up the map: {up}"


def test_the_engine_imports_no_source_no_synthesis_and_no_warp():
    for name, targets in GRAPH.items():
        if name.startswith("jit.code.engine"):
            bad = [t for t in targets if t == "warp" or t.startswith(("jit.code.synthesis", "jit.code.harvest",
                                                                        "jit.code.extraction", "jit.code.checks"))]
            assert not bad, f"{name} imports {bad}"


def test_no_import_cycle():
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(GRAPH.get(node, ())):
            if target == "warp":
                continue
            if state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[node] = 2

    for start in sorted(GRAPH):
        if start not in state:
            visit(start, [start])


def test_the_reader_sees_in_function_imports(tmp_path):
    """The check is only as good as its reading: an import inside a function counts."""
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from jit.code.engine import writers\n    import warp as wp\n")
    assert imports(sample, {"jit.code.engine.writers"}) == {"jit.code.engine.writers", "warp"}


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "jit" / "benchmarks").glob("*.py")))
def test_benchmark_scripts_import_names_that_exist(script):
    """Benchmarks run by hand sit above the package: a name they import must still be where they look."""
    import importlib
    import importlib.util

    tree = ast.parse((ROOT / "jit" / "benchmarks" / script).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jit.code"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), \
                    f"{script}: from {node.module} import {alias.name}"
