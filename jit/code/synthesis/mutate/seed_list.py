"""The seeds: real kernels worth mutating, listed in ``mutant_seeds.json`` with their launches.

A seed is a kernel of Warp's examples and tests (the seed half of the reference corpus only)
or of Warp's library code, that builds alone once its test scaffolding is stripped
(``scaffolding``), computes something, and has a launch (``infer``, checked by ``verify``).
The list names each seed by file and line and stores what takes time to find: its launch, the
precision changes that build, the block_dim of a tile kernel, and its draw weight. The text of
a seed is made again from the installed Warp: every file a seed lives in is parsed once per
process, or read from a cache on disk keyed by Warp's version and the list's content, and
``warm`` fills both before worker processes fork.

What it leaves out: selecting the seeds (``rebuild``, ``python -m jit.code.synthesis.mutate
--rebuild-seeds``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from jit.code.analysis import reference
from jit.code.synthesis.mutate import driver, scaffolding
from jit.code.synthesis.mutate.launch import Launch
from jit.code.synthesis.mutate.syntax import is_docstring
from jit.code.synthesis.mutate.unit import Unit

SEEDS_FILE = Path(__file__).resolve().parent.parent / "mutant_seeds.json"
PREPARE_VERSION = 3  # bumped whenever ``prepare`` may give another text for the same kernel
LIBRARY_ROOT = "warp/_src"
TESTS_ROOT = "warp/tests/"


@dataclass(frozen=True, slots=True)
class Seed:
    module: str
    path: str
    name: str  # the kernel's name in Warp's source
    line: int
    kernel: str = ""  # its name once prepared (``test_`` dropped)
    dtypes: tuple[str, ...] = ()  # precision changes that build too
    block_dim: int | None = None  # launch block size of a tile kernel
    launch: dict = field(default_factory=dict, compare=False, hash=False)
    weight: float = 1.0

    def to_dict(self) -> dict:
        row = {
            "module": self.module,
            "path": self.path,
            "name": self.name,
            "line": self.line,
            "kernel": self.kernel,
            "dtypes": list(self.dtypes),
            "weight": round(self.weight, 3),
        }
        if self.block_dim is not None:
            row["block_dim"] = self.block_dim
        row["launch"] = self.launch
        return row

    @classmethod
    def from_dict(cls, row: dict) -> Seed:
        return cls(
            row["module"],
            row["path"],
            row["name"],
            row["line"],
            row.get("kernel") or row["name"],
            tuple(row.get("dtypes", ())),
            row.get("block_dim"),
            row.get("launch") or {},
            row.get("weight", 1.0),
        )

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def runnable(self) -> bool:
        return bool(self.launch) and not self.launch.get("reason")


# ---------------------------------------------------------------------------------------------
# the real kernels


def distribution_root() -> Path:
    return Path(str(importlib.metadata.distribution("warp-lang").locate_file("")))


@functools.cache
def kernels_in(path: str) -> dict[tuple[str, int], reference.RealKernel]:
    """The kernels of one file of the installed Warp, by (name, line)."""
    text = (distribution_root() / path).read_text(encoding="utf-8")
    return {(k.name, k.line): k for k in reference.kernels_of(text, path)}


def library_kernels() -> list[reference.RealKernel]:
    """Kernels of Warp's library code (``warp/_src``), parsed like the reference corpus."""
    root = distribution_root()
    out = []
    for path in sorted((root / LIBRARY_ROOT).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            out.extend(kernels_in(rel).values())
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
    return out


def prepare(kernel: reference.RealKernel) -> tuple[str, str] | str:
    """(prepared kernel name, source) of a real kernel without its test scaffolding, or why it
    cannot be a seed. A kernel of Warp's tests must compute something (not probe a feature), and
    loses what names it as a test: its ``_kernel`` suffix, and a docstring stating what the test
    checks."""
    unit = Unit(kernel.context, kernel.name)
    why = scaffolding.strip(unit.tree, unit.kernel)
    if why:
        return why
    if kernel.path.startswith(TESTS_ROOT):
        why = scaffolding.probe(unit.kernel)
        if why:
            return f"a test probe: {why}"
        name = scaffolding.test_name(unit.kernel.name)
        if name not in unit.taken():  # a helper may hold the name already
            unit.kernel.name = name
        body = unit.kernel.body
        if body and is_docstring(body[0]) and scaffolding.claims(body[0].value.value):
            body.pop(0)
            if not body:
                body.append(ast.Pass())
    for _, note in unit.notes.statements.values():
        note.comments = [c for c in note.comments if not scaffolding.testing_comment(c)]
        if note.trailing and scaffolding.testing_comment(note.trailing):
            note.trailing = None
    unit.kernel_name = unit.kernel.name
    return unit.kernel.name, unit.render()


# ---------------------------------------------------------------------------------------------
# the committed list


@functools.cache
def seeds() -> tuple[Seed, ...]:
    """The committed seeds whose kernels the installed Warp has, ready to mutate (texts made,
    see ``warm``)."""
    rows = json.loads(SEEDS_FILE.read_text())["seeds"]
    listed = tuple(Seed.from_dict(r) for r in rows)
    texts = _texts(listed)
    found = tuple(s for s in listed if s.key in texts)
    if not found:
        raise driver.MutationError("-", f"no seed of {SEEDS_FILE.name} is in this Warp; run --rebuild-seeds")
    return found


def warm() -> None:
    """Everything a mutant needs that takes time, made before worker processes fork."""
    for s in seeds():
        seed_base(s)


TEST_DRAW = 0.3  # a test kernel is drawn at this share of its listed weight: examples and library code compute more


@functools.cache
def seed_weights() -> tuple[float, ...]:
    return tuple(s.weight * (TEST_DRAW if s.path.startswith(TESTS_ROOT) else 1.0) for s in seeds())


def seed_text(seed: Seed) -> str:
    return _seed_texts()[seed.key][1]


@functools.cache
def _seed_texts() -> dict[str, tuple[str, str]]:
    """The texts of ``seeds()``, found without hashing every seed to look them up (``_texts`` is
    keyed by the whole list: 425 hashes for each mutant)."""
    return _texts(seeds())


@functools.cache
def seed_launch(seed: Seed) -> Launch | None:
    return Launch.from_dict(seed.launch) if seed.launch else None


@functools.cache
def seed_base(seed: Seed) -> frozenset[str]:
    """The fingerprint a mutant of ``seed`` is kept apart from."""
    return frozenset(driver.fingerprint(driver.unformatted(seed_text(seed))))


@functools.cache
def _texts(listed: tuple[Seed, ...]) -> dict[str, tuple[str, str]]:
    """seed key -> (prepared kernel name, source), from the disk cache or made and cached."""
    key = hashlib.sha1(f"{PREPARE_VERSION}:{warp_version()}:".encode() + SEEDS_FILE.read_bytes()).hexdigest()[:16]
    path = cache_dir() / f"mutant_seeds-{key}.json"
    try:
        return {k: tuple(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError):
        pass
    texts = {}
    for s in listed:
        try:
            kernel = kernels_in(s.path).get((s.name, s.line))
        except (OSError, UnicodeDecodeError, SyntaxError):
            continue
        made = prepare(kernel) if kernel is not None else None
        if isinstance(made, tuple):
            texts[s.key] = made
    _write(path, json.dumps(texts))
    return texts


def warp_version() -> str:
    return importlib.metadata.version("warp-lang")


def cache_dir() -> Path:
    base = os.environ.get("JIT_SYNTH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "warp-jit-synth"
    )
    return Path(base)


def _write(path: Path, text: str) -> None:
    """Write atomically; a cache that cannot be written is only slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
            f.write(text)
        os.replace(f.name, path)
    except OSError:
        pass
