"""The one record type of a dataset (``Pair``), its one builder from extracted code, source
normalisation and content ids.

A record's id is a hash of its normalised Python source: comments, formatting and the names
the source defines (kernel, helpers, structs) do not change it, so two kernels that differ
only in naming are duplicates. What it leaves out: writing records (``writers``).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_CUDA_ARCH = 90  # NVRTC's target when a run names none
CODE_FIELDS = ("cpu_forward", "cpu_backward", "cuda_forward", "cuda_backward", "cpu_functions", "cuda_functions")
DEVICE_CHOICES = {"cpu": ("cpu",), "cuda": ("cuda",), "both": ("cpu", "cuda")}  # --device -> devices with code
FIELDS = ("id", "kernel_name", "category", "python_source", *CODE_FIELDS, "validation", "metadata")


@dataclass(slots=True)
class Pair:
    id: str
    kernel_name: str
    category: str
    python_source: str
    cpu_forward: str | None = None
    cpu_backward: str | None = None
    cuda_forward: str | None = None
    cuda_backward: str | None = None
    cpu_functions: str | None = None
    cuda_functions: str | None = None
    validation: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    io: dict[str, Any] | None = None
    cuda_ptx: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["io"] is None:
            del d["io"]
        if d["cuda_ptx"] is None:
            del d["cuda_ptx"]
        return d


def functions_code(ir) -> str:
    """Generated structs, helper forwards and helper adjoints, in the order Warp emits them."""
    parts = [text for _, text in ir.structs]
    parts += [f.forward for f in ir.functions]
    parts += [f.adjoint for f in ir.functions if f.adjoint]
    return "\n".join(p.strip("\n") for p in parts if p.strip()) + ("\n" if parts else "")


def code_fields(irs: dict) -> dict[str, str | None]:
    """A record's code fields from per-device extracted code (``KernelIR``); None for a device
    without code. The CPU forward is preceded by its ``wp_args_<kernel>`` struct."""
    out: dict[str, str | None] = {}
    for device in ("cpu", "cuda"):
        ir = irs.get(device)
        forward = None if ir is None else ir.forward
        if ir is not None and ir.args_struct:
            forward = ir.args_struct.strip("\n") + "\n" + ir.forward
        out[f"{device}_forward"] = forward
        out[f"{device}_backward"] = None if ir is None else ir.backward
        out[f"{device}_functions"] = None if ir is None else functions_code(ir)
    return out


def build_record(irs: dict, kernel_name: str, category: str, python_source: str, metadata: dict,
                 record_id: str | None = None) -> Pair:
    """THE builder of a record from extracted code, whatever the source: the same kernel gives the
    same code fields through generate, extract and trace."""
    return Pair(id=record_id or content_id(python_source), kernel_name=kernel_name, category=category,
                python_source=python_source, **code_fields(irs), validation={d: "generated" for d in irs},
                metadata=metadata)


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node


def normalise(source: str) -> str:
    """Source with comments and layout dropped and top-level definitions renamed by position."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "\n".join(line.rstrip() for line in source.strip().splitlines())
    mapping: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name not in mapping:
            mapping[node.name] = f"_d{len(mapping)}"
    for node in ast.walk(tree):  # docstrings are comments too
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            body.pop(0)
            if not body:
                body.append(ast.Pass())
    return ast.unparse(_Renamer(mapping).visit(tree))


def content_id(source: str) -> str:
    return hashlib.sha256(normalise(source).encode("utf-8")).hexdigest()[:20]


def salted_id(source: str, code: str) -> str:
    """The id of a record whose Python text may not tell it apart from another kernel's (real code
    that is not self-contained): the content id and the generated code together."""
    return hashlib.sha256(f"{content_id(source)}:{code}".encode("utf-8")).hexdigest()[:20]


def record_id(record: dict) -> str:
    """The id a record must carry: ``content_id`` of its python_source, or ``salted_id`` when its
    metadata says ``id_salt: code``."""
    meta = record.get("metadata") or {}
    if meta.get("id_salt") == "code":
        return salted_id(record["python_source"], record.get("cpu_forward") or record.get("cuda_forward") or "")
    return content_id(record["python_source"])
