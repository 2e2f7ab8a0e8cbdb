"""The compile check: a batch of records' code compiles for every device it has code for.

During a run (``validate_batch``) the batch's own Warp module is compiled; for a dataset on disk
(``compile_rebuilt``) each record is rebuilt from its python_source alone, many to a module but
never two that define the same name, and compiled: CPU with Warp's clang, CUDA with NVRTC to PTX
(no GPU needed). What it leaves out: running kernels (``execute``) and the command line.
"""

from __future__ import annotations

import os
from collections import defaultdict


BATCH = 64


# ---------------------------------------------------------------------------------------------
# during generation


def validate_batch(run, module, items: list, records: dict, builds: dict | None = None,
                   block_dim: int | None = None) -> dict[str, str]:
    """Compile (and for ``execute`` run) a generated batch; sets each record's ``validation``.

    ``items`` are ``(spec, kernel, irs)`` from one Warp module; ``builds`` the extraction's
    reusable builds of exactly these kernels (device -> Build). Returns {kernel name: reason}
    for the kernels to drop.
    """
    builds = builds or {}
    from jit.code.extraction.compile import compile_batch, kernel_ptx

    failed: dict[str, str] = {}
    kernels = [k for _, k, _ in items]
    if "cpu" in run.devices and run.validate != "execute":  # execute compiles the CPU module itself
        verdict, _ = compile_batch(module, kernels, "cpu", build=builds.get("cpu"), block_dim=block_dim)
        failed.update({k: r for k, r in verdict.items() if r})
    for i, arch in enumerate(run.archs if "cuda" in run.devices else ()):
        alive = [k for k in kernels if k.key not in failed]
        if not alive:
            break
        want_ptx = run.emit_ptx and i == 0
        reuse = builds.get("cuda") if len(alive) == len(kernels) else None
        verdict, ptx = compile_batch(module, alive, "cuda", arch=arch, want_ptx=want_ptx, build=reuse,
                                     block_dim=block_dim)
        failed.update({k: f"{r} (sm_{arch})" for k, r in verdict.items() if r})
        if want_ptx and ptx is None:  # the batch was bisected: compile the survivors again for their PTX
            alive = [k for k in alive if k.key not in failed]
            if alive:
                _, ptx = compile_batch(module, alive, "cuda", arch=arch, want_ptx=True, block_dim=block_dim)
        if want_ptx and ptx is not None:
            for k in alive:
                if k.key in records:
                    records[k.key].cuda_ptx = kernel_ptx(ptx, k.get_mangled_name())
    for spec, kernel, _ in items:
        if kernel.key in records and kernel.key not in failed:
            records[kernel.key].validation = {d: "compiled" for d in run.devices}
    if run.validate == "execute":
        from jit.code.checks import execute

        alive = [(s, k, irs) for s, k, irs in items if k.key not in failed]
        failed.update(execute.execute_batch(run, alive, records))
    return failed


# ---------------------------------------------------------------------------------------------
# the validate command


def launch_block_dim(record: dict) -> int | None:
    """The CUDA block_dim a record's code is for, None for its module's default."""
    meta = record.get("metadata") or {}
    launch = meta.get("launch") or {}
    if launch.get("block_dim"):
        return launch["block_dim"]
    if meta.get("found_by") == "trace" and str(meta.get("device", "")).startswith("cuda"):
        return meta.get("block_dim")
    cuda = (meta.get("devices") or {}).get("cuda") if isinstance(meta.get("devices"), dict) else None
    if cuda and cuda.get("module_block_dim"):
        return cuda.get("block_dim")
    return None


def compile_rebuilt(records: list[dict], arch: int = 90, tag: str = "") -> dict[str, str]:
    """Rebuild records from their python_source alone and compile them; id -> reason for the bad.

    Records are compiled many to a module (Warp compiles a module once per launch block_dim, so
    they are grouped by it); records that define the same top-level name go to different modules,
    as each record's text is a file of its own.
    """
    groups: dict = defaultdict(list)
    for r in records:
        groups[launch_block_dim(r)].append(r)
    out: dict[str, str] = {}
    for block_dim, group in sorted(groups.items(), key=lambda g: g[0] or 0):
        for i, batch in enumerate(_disjoint_batches(group)):
            out.update(_compile_records(batch, arch, f"{tag}{block_dim}_{i}", block_dim))
    return out


def _disjoint_batches(records: list[dict]) -> list[list[dict]]:
    """Batches of at most BATCH records whose sources define different top-level names."""
    import ast

    batches: list[tuple[list[dict], set[str]]] = []
    for r in records:
        try:
            names = {n.name if hasattr(n, "name") else "" for n in ast.parse(r["python_source"]).body
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            names |= {t.id for n in ast.parse(r["python_source"]).body if isinstance(n, ast.Assign)
                      for t in n.targets if isinstance(t, ast.Name)}
        except SyntaxError:
            names = set()
        for batch, used in batches:
            if len(batch) < BATCH and not names & used:
                batch.append(r)
                used |= names
                break
        else:
            batches.append(([r], set(names)))
    return [b for b, _ in batches]


def _compile_records(records: list[dict], arch: int, tag: str, block_dim: int | None = None) -> dict[str, str]:
    """Rebuild records from python_source alone (one module) and compile; id -> reason."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.compile import compile_batch

    out: dict[str, str] = {}
    kept = []
    for r in records:  # a source that does not define its kernel is bad on its own
        try:
            h = wb.define([r["python_source"]], f"jit_synth_check_probe_{tag}")
            ok = wb.is_kernel(h.namespace.get(r["kernel_name"]))
            h.release()
        except Exception as exc:
            out[r["id"]] = f"python_source does not run: {type(exc).__name__}"
            continue
        if not ok:
            out[r["id"]] = "python_source does not define kernel_name"
        else:
            kept.append(r)
    if not kept:
        return out
    handle = wb.define([r["python_source"] for r in kept], f"jit_synth_check_{tag}_{os.getpid()}")
    try:
        kernels = [_concrete(handle.namespace[r["kernel_name"]]) for r in kept]
        by_key = {k.key: r["id"] for k, r in zip(kernels, kept)}
        for device in ("cpu", "cuda"):
            todo = [k for k, r in zip(kernels, kept) if r.get(f"{device}_forward") and by_key[k.key] not in out]
            if not todo:
                continue
            modules: dict = {}  # a module="unique" kernel lives in a Warp module of its own
            for k in todo:
                modules.setdefault(id(wb.kernel_module(k)), (wb.kernel_module(k), []))[1].append(k)
            for module, group in modules.values():
                verdict, _ = compile_batch(module, group, device, arch=arch, block_dim=block_dim)
                for key, reason in verdict.items():
                    if reason:
                        out[by_key[key]] = reason
    finally:
        handle.release()
    return out


def _concrete(kernel):
    """The kernel a record's text defines: for an instance of a generic kernel, its one overload."""
    from jit.code.extraction import warp_backend as wb

    if wb.is_generic(kernel):
        overloads = wb.kernel_overloads(kernel)
        if len(overloads) == 1:
            return overloads[0]
    return kernel
