"""``run_traced``: a program run unchanged yields every kernel Warp built, verbatim.

Each traced run starts a Python with Warp (a few seconds); the tests share two runs.
"""

from __future__ import annotations

import collections
import importlib.util
import sys
import textwrap

import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many
from jit.code.harvest.traced import child_command, run_traced
from jit.code.records import FIELDS, content_id

PROGRAM = textwrap.dedent('''\
    import os
    import sys
    from typing import Any

    import numpy as np
    import warp as wp


    @wp.kernel
    def double(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 2.0


    def make_scale(k: float):
        @wp.kernel
        def scale(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = a[i] * k
        return scale


    @wp.kernel
    def add_one(a: wp.array(dtype=Any)):
        i = wp.tid()
        a[i] = a[i] + a.dtype(1)


    if __name__ == "__main__":
        a = wp.array(np.arange(4, dtype=np.float32), device="cpu")
        b = wp.array(np.arange(4, dtype=np.float64), device="cpu")
        wp.launch(double, dim=4, inputs=[a], device="cpu")
        wp.launch(make_scale(3.0), dim=4, inputs=[a], device="cpu")
        wp.launch(add_one, dim=4, inputs=[a], device="cpu")
        wp.launch(add_one, dim=4, inputs=[b], device="cpu")
        print("sum", float(a.numpy().sum() + b.numpy().sum()), flush=True)
        if "--crash" in sys.argv:
            os.abort()  # no interpreter shutdown: only what was flushed survives
''')


@pytest.fixture(scope="module")
def crashed_run(tmp_path_factory):
    """The program run as a script that aborts after its launches; (result, script folder, files before)."""
    folder = tmp_path_factory.mktemp("project")
    script = folder / "prog.py"
    script.write_text(PROGRAM)
    before = sorted(p.name for p in folder.iterdir())
    work = tmp_path_factory.mktemp("work")
    result = run_traced(["python", str(script), "--crash"], ("cpu", "cuda"), work)
    return result, folder, before


def test_all_concrete_kernels_captured_from_a_crashing_program(crashed_run):
    result, _, _ = crashed_run
    assert result.exit_status != 0
    # a: (0+1+2+3)*2*3 + 4 = 40, b: (0+1+2+3) + 4 = 10
    assert "sum 50.0" in result.output_tail
    found = sorted((r["kernel_name"], r["metadata"]["overload"]) for r in result.records)
    assert found == [("add_one", "a1f4"), ("add_one", "a1f8"), ("double", None), ("make_scale__locals__scale", None)]
    assert result.captured == 4 and not result.failed
    for record in result.records:
        assert set(FIELDS) <= set(record)
        assert record["id"] == content_id(record["python_source"])
        assert record["cpu_forward"] and record["cuda_forward"] and record["cpu_backward"]
        meta = record["metadata"]
        assert meta["found_by"] == "trace" and meta["file"].endswith("prog.py") and meta["distribution"] is None
        assert meta["block_dim"] == 1 and meta["device"] == "cpu" and meta["self_contained"] is True


def test_records_are_warps_code_for_the_same_kernels(crashed_run, tmp_path):
    """The same kernels built in this process with the same options give the same text."""
    result, folder, _ = crashed_run
    spec = importlib.util.spec_from_file_location("jit_trace_prog", folder / "prog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        wb.init()
        import warp as wp

        kernels = {
            ("double", None): module.double,
            ("make_scale__locals__scale", None): module.make_scale(3.0),
            ("add_one", "a1f4"): wp.overload(module.add_one, {"a": wp.array(dtype=wp.float32)}),
            ("add_one", "a1f8"): wp.overload(module.add_one, {"a": wp.array(dtype=wp.float64)}),
        }
        for record in result.records:
            kernel = kernels[(record["kernel_name"], record["metadata"]["overload"])]
            ir = extract_many([kernel], ("cpu", "cuda"))[0]
            assert record["cpu_forward"] == ir["cpu"].args_struct.strip("\n") + "\n" + ir["cpu"].forward
            assert record["cuda_forward"] == ir["cuda"].forward
            assert record["cpu_backward"] == ir["cpu"].backward
    finally:
        sys.modules.pop(spec.name, None)


def test_nothing_written_into_the_project(crashed_run):
    _, folder, before = crashed_run
    assert sorted(p.name for p in folder.iterdir()) == before


def test_python_dash_m_form(tmp_path, monkeypatch):
    package = tmp_path / "tinypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "run.py").write_text(textwrap.dedent('''\
        import sys
        import warp as wp

        @wp.kernel(enable_backward=False)
        def fill(a: wp.array(dtype=wp.int32), v: int):
            a[wp.tid()] = v

        a = wp.zeros(3, dtype=wp.int32, device="cpu")
        wp.launch(fill, dim=3, inputs=[a, 7], device="cpu")
        sys.exit(3)
    '''))
    monkeypatch.chdir(tmp_path)
    result = run_traced(["python", "-m", "tinypkg.run"], ("cpu",), tmp_path / "work", backward=False)
    assert result.exit_status == 3
    [record] = result.records
    assert record["kernel_name"] == "fill" and record["cuda_forward"] is None and record["cpu_backward"] is None
    assert record["metadata"]["module"] == "tinypkg.run" and record["metadata"]["file"] == "tinypkg/run.py"
    assert record["metadata"]["kernel_options"] == {"enable_backward": False}


def test_child_command_forms():
    assert child_command(["python", "x.py", "-v"]) == [sys.executable, "x.py", "-v"]
    assert child_command(["python3", "-m", "m"]) == [sys.executable, "-m", "m"]
    assert child_command(["pytest", "-q", "t.py"]) == [sys.executable, "-m", "pytest", "-q", "t.py"]
    with pytest.raises(ValueError):
        child_command(["bash", "run.sh"])


def test_trace_command_writes_a_compiled_dataset(tmp_path, monkeypatch, capfd):
    """`jit-synth trace -- python prog.py`: the dataset folder, the program's status, resume."""
    import json

    from jit import cli
    from jit.code.checks import dataset as validate
    from jit.code.engine import writers

    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    monkeypatch.chdir(project)
    out = tmp_path / "ds"
    argv = ["trace", "--output", str(out), "--workers", "2", "--device", "cpu", "--", "python", "prog.py", "--crash"]
    assert cli.main(argv) == 0
    stdout, _ = capfd.readouterr()
    assert "sum 50.0" in stdout  # the program's own output comes through
    assert "program exit status: -6" in stdout  # SIGABRT
    records = list(writers.read_dataset(str(out)))
    found = sorted((r["kernel_name"], r["metadata"]["overload"]) for r in records)
    assert found == [("add_one", "a1f4"), ("add_one", "a1f8"), ("double", None), ("make_scale__locals__scale", None)]
    assert all(r["validation"] == {"cpu": "compiled"} and r["cuda_forward"] is None for r in records)
    assert sorted(p.name for p in project.iterdir()) == ["prog.py"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["source"] == "trace" and stats["program_exit_status"] == -6 and stats["count"] == 4
    assert stats["command"] == ["python", "prog.py", "--crash"]
    problems, _, n = validate.check_dataset(str(out))
    assert not problems and n == 4
    assert cli.main([*argv[:1], "--resume", *argv[1:]]) == 0  # finished: nothing runs again
    assert "complete already" in capfd.readouterr().out


def test_trace_command_needs_a_python_program(tmp_path, capsys):
    from jit import cli

    assert cli.main(["trace", "--output", str(tmp_path / "ds"), "--", "bash", "run.sh"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot trace" in err
    assert cli.main(["trace", "--output", str(tmp_path / "ds")]) == 2
    assert "nothing to run" in capsys.readouterr().err
    assert not (tmp_path / "ds").exists()


HELPERS = textwrap.dedent('''\
    import warp as wp


    @wp.func
    def twice(x: float):
        return 2.0 * x
''')

OPAQUE = textwrap.dedent('''\
    import warp as wp

    import helpers  # reached through a module attribute: a kernel's text cannot carry it


    @wp.kernel
    def doubled(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = helpers.twice(a[i])


    @wp.kernel(module="unique")
    def own_module(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0


    a = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(doubled, dim=4, inputs=[a], device="cpu")
    wp.launch(own_module, dim=4, inputs=[a], device="cpu")
''')


def test_trace_keeps_kernels_its_text_cannot_rebuild_compiled_in_the_program(tmp_path, monkeypatch, capfd):
    from jit import cli
    from jit.code.checks import dataset as validate
    from jit.code.engine import writers
    from jit.code.records import record_id

    (tmp_path / "opaque.py").write_text(OPAQUE)
    (tmp_path / "helpers.py").write_text(HELPERS)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "ds"
    assert cli.main(["trace", "--output", str(out), "--workers", "1", "--", "python", "opaque.py"]) == 0
    records = {r["kernel_name"]: r for r in writers.read_dataset(str(out))}
    assert set(records) == {"doubled", "own_module"}
    opaque = records["doubled"]
    assert opaque["metadata"]["self_contained"] is False and opaque["metadata"]["self_contained_reason"]
    assert opaque["metadata"]["id_salt"] == "code" and opaque["id"] == record_id(opaque)
    assert opaque["validation"] == {"cpu": "compiled", "cuda": "compiled"}  # compiled while the program ran
    assert records["own_module"]["metadata"]["self_contained"] is True
    # validate rebuilds what can be rebuilt (a module="unique" kernel too) and skips the rest
    notes = collections.Counter()
    problems, bad, n = validate.check_dataset(str(out), notes=notes)
    assert n == 2 and not problems and notes["not self-contained"] == 1
