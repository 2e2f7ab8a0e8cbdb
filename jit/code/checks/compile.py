"""The compile check: a batch of records' code compiles for every device it has code for.

Live kernels (generated and extracted ones) are compiled in their own Warp modules; records that
only have text (traced kernels, a dataset on disk: ``compile_rebuilt``) are rebuilt from their
python_source alone, many to a module but never two that could clash, and compiled: CPU with
Warp's clang, CUDA with NVRTC to PTX (no GPU needed). What it leaves out: running kernels
(``execute``) and the command line.
"""

from __future__ import annotations

import os
from collections import defaultdict

from jit.code.checks.base import LIVE, Batch, Check
from jit.code.checks.rebuild import batches

BATCH = 64


# ---------------------------------------------------------------------------------------------
# the check


def compile_check(run, batch: Batch) -> dict[str, str]:
    """Compile a batch for the run's devices (CUDA for each of its archs); sets ``validation``.

    Live kernels are compiled in their own Warp modules (one unit per module and launch block_dim,
    bisected on failure; the extraction's builds are reused when the batch is whole); records
    without a live kernel are rebuilt from their text (``compile_rebuilt``), or, when their text
    cannot rebuild them, count only if the program that made them compiled them.
    """
    failed = _compile_live(run, batch)
    text = {k: r for k, r in batch.records.items() if k not in batch.kernels}
    if text:
        failed.update(_compile_text(run, text))
    for key, record in batch.records.items():
        if key not in failed:
            record.validation = {d: "compiled" for d in run.devices}
    return failed


def _compile_live(run, batch: Batch) -> dict[str, str]:
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.compile import compile_batch, kernel_ptx

    groups: dict[tuple, list[str]] = {}
    for key in batch.records:
        if key in batch.kernels:
            kernel = batch.kernels[key]
            block_dim = batch.block_dim if batch.block_dim is not None else launch_block_dim(batch.records[key])
            groups.setdefault((id(wb.kernel_module(kernel)), block_dim), []).append(key)
    whole = len(groups) == 1 and len(next(iter(groups.values()), [])) == len(batch.records)
    skip_cpu = "execute" in (run.checks or (run.validate,))  # execute compiles the CPU module itself
    failed: dict[str, str] = {}
    for (_, block_dim), keys in groups.items():
        kernels = [batch.kernels[k] for k in keys]
        by_kernel = {k.key: key for k, key in zip(kernels, keys)}
        module = wb.kernel_module(kernels[0])
        builds = batch.builds if whole else {}
        if "cpu" in run.devices and not skip_cpu:
            verdict, _ = compile_batch(module, kernels, "cpu", build=builds.get("cpu"), block_dim=block_dim)
            failed.update({by_kernel[k]: r for k, r in verdict.items() if r})
        for i, arch in enumerate(run.archs if "cuda" in run.devices else ()):
            alive = [k for k in kernels if by_kernel[k.key] not in failed]
            if not alive:
                break
            want_ptx = run.emit_ptx and i == 0
            reuse = builds.get("cuda") if len(alive) == len(kernels) else None
            verdict, ptx = compile_batch(module, alive, "cuda", arch=arch, want_ptx=want_ptx, build=reuse,
                                         block_dim=block_dim)
            failed.update({by_kernel[k]: f"{r} (sm_{arch})" for k, r in verdict.items() if r})
            if want_ptx and ptx is None:  # the batch was bisected: compile the survivors again for their PTX
                alive = [k for k in alive if by_kernel[k.key] not in failed]
                if alive:
                    _, ptx = compile_batch(module, alive, "cuda", arch=arch, want_ptx=True, block_dim=block_dim)
            if want_ptx and ptx is not None:
                for k in alive:
                    batch.records[by_kernel[k.key]].cuda_ptx = kernel_ptx(ptx, k.get_mangled_name())
    return failed


def _compile_text(run, records: dict) -> dict[str, str]:
    """Records without a live kernel: rebuilt from their text and compiled, for every arch."""
    from jit.code.extraction import warp_backend as wb

    wb.init()
    wb.silence_performance_notes()
    failed: dict[str, str] = {}
    rebuild = {}
    for key, record in records.items():
        if (record.metadata or {}).get("self_contained") is not False:
            rebuild[key] = record
        elif record.validation.get(run.devices[0]) != "compiled":
            failed[key] = "not self-contained and not compiled in the program"
    by_id = {r.id: k for k, r in rebuild.items()}
    for rid, reason in compile_rebuilt([r.to_dict() for r in rebuild.values()], run.archs).items():
        failed[by_id[rid]] = reason.split(":")[0][:80]
    return failed


# ---------------------------------------------------------------------------------------------
# records rebuilt from their text


def launch_block_dim(record) -> int | None:
    """The CUDA block_dim a record's code (a record dict or ``Pair``) is for, None for its module's default."""
    meta = (record.get("metadata") if isinstance(record, dict) else record.metadata) or {}
    launch = meta.get("launch") or {}
    if launch.get("block_dim"):
        return launch["block_dim"]
    if meta.get("found_by") == "trace" and str(meta.get("device", "")).startswith("cuda"):
        return meta.get("block_dim")
    cuda = (meta.get("devices") or {}).get("cuda") if isinstance(meta.get("devices"), dict) else None
    if cuda and cuda.get("module_block_dim"):
        return cuda.get("block_dim")
    return None


def compile_rebuilt(records: list[dict], archs: tuple[int, ...] = (90,), tag: str = "") -> dict[str, str]:
    """Rebuild records from their python_source alone and compile them (the CPU once, CUDA for each
    arch); id -> reason for the bad.

    Records are compiled many to a module (Warp compiles a module once per launch block_dim, so
    they are grouped by it), never two that could clash in one translation unit (``rebuild.batches``).
    A record that fails in company is compiled again alone, so the verdict is the record's own:
    the one the run that wrote it gave.
    """
    groups: dict = defaultdict(list)
    for r in records:
        groups[launch_block_dim(r)].append(r)
    out: dict[str, str] = {}
    for block_dim, group in sorted(groups.items(), key=lambda g: g[0] or 0):
        for i, batch in enumerate(batches(group, BATCH)):
            bad = _compile_records(batch, archs, f"{tag}{block_dim}_{i}", block_dim)
            if len(batch) > 1 and bad:
                for j, r in enumerate(r for r in batch if r["id"] in bad):
                    bad.pop(r["id"])
                    bad.update(_compile_records([r], archs, f"{tag}{block_dim}_{i}_{j}", block_dim))
            out.update(bad)
    return out


def _compile_records(records: list[dict], archs: tuple[int, ...], tag: str,
                     block_dim: int | None = None) -> dict[str, str]:
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
        for device, arch in [("cpu", archs[0]), *(("cuda", a) for a in archs)]:
            todo = [k for k, r in zip(kernels, kept) if r.get(f"{device}_forward") and by_key[k.key] not in out]
            if not todo:
                continue
            modules: dict = {}  # a module="unique" kernel lives in a Warp module of its own
            for k in todo:
                modules.setdefault(id(wb.kernel_module(k)), (wb.kernel_module(k), []))[1].append(k)
            for module, group in modules.values():
                with wb.native_stderr_silenced():  # clang's "retrying without precompiled headers": the verdict says it
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


CHECK = Check("compile", LIVE, "compiles for every device: CPU with Warp's clang, CUDA with NVRTC (no GPU needed)",
              compile_check)
