"""``jit-synth extract``: files, folders and packages in, JSONL out; bad input exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from jit.code.commands import extract
from jit.code.harvest import modules as discover
from jit.code.records import FIELDS, content_id

KERNELS = textwrap.dedent('''
    from typing import Any

    import warp as wp

    wp.config.enable_backward = False  # real code does this; it must not leak into other modules


    @wp.func
    def half(x: float):
        return 0.5 * x  # } a brace in a comment


    @wp.kernel
    def halve(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = half(a[i])


    @wp.kernel
    def fill(a: wp.array(dtype=Any), v: float):
        a[wp.tid()] = a.dtype(v)


    wp.overload(fill, {"a": wp.array(dtype=float), "v": float})
    wp.overload(fill, {"a": wp.array(dtype=wp.float64), "v": float})


    def make_adder(c: float):
        @wp.kernel
        def add_const(a: wp.array(dtype=float)):
            a[wp.tid()] = a[wp.tid()] + c

        return add_const


    ADD_ONE = make_adder(1.0)
''')

OTHER = textwrap.dedent('''
    import warp as wp


    @wp.kernel
    def negate(a: wp.array(dtype=float)):
        a[wp.tid()] = -a[wp.tid()]
''')


def read_dataset(folder) -> list[dict]:
    from jit.code.engine import writers

    return list(writers.read_dataset(str(folder)))


def run_extract(argv, capsys) -> tuple[int, str, str]:
    code = extract.main([*argv, "--workers", "1"] if "--workers" not in argv else argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_file_target_gives_one_record_per_concrete_kernel(tmp_path, capsys):
    source = tmp_path / "kernels.py"
    source.write_text(KERNELS)
    output = tmp_path / "out"
    code, out, err = run_extract([str(source), "--device", "both", "--output", str(output), "--validate", "none"], capsys)
    assert code == 0, err
    records = {(r["kernel_name"], r["metadata"]["overload"]): r for r in read_dataset(output)}
    assert [name for name, _ in records] == ["halve", "fill", "fill", "make_adder__locals__add_const"]
    assert out.strip().splitlines()[-1] == "modules: 1 imported, 0 failed to import; kernels: 4 found, 4 records"
    for record in records.values():
        assert set(FIELDS) <= set(record) and record["category"] == "extracted"
        meta = record["metadata"]
        assert meta["file"] == str(source.resolve()) and meta["found_by"] == "module" and meta["line"] > 1
        assert meta["self_contained"] is True and record["id"] == content_id(record["python_source"])
        assert "blockIdx" in record["cuda_forward"] and "blockIdx" not in record["cpu_forward"]
        assert record["cpu_forward"].startswith("struct wp_args_")
        # Warp copies wp.config.enable_backward into the module when its first kernel is defined,
        # so a launch of these kernels has no backward: neither has the record
        assert record["cpu_backward"] is None and record["cuda_backward"] is None
        assert meta["devices"]["cuda"]["enable_backward"] is False
        assert meta["config_changes"] == {"enable_backward": False}
    assert len({r["id"] for r in records.values()}) == 4

    halve = records["halve", None]
    assert halve["python_source"].index("def half(") < halve["python_source"].index("def halve(")
    assert "half_0(" in halve["cpu_functions"] and "half_0(" in halve["cuda_functions"]
    assert "adj_half_0(" not in halve["cuda_functions"]  # backward off: Warp emits no adjoint
    assert "# } a brace in a comment" in halve["cuda_functions"]
    assert halve["metadata"]["helpers"] == ["half"]
    devices = halve["metadata"]["devices"]
    assert (devices["cpu"]["block_dim"], devices["cuda"]["block_dim"]) == (1, 256)
    # the factory closure's text rebuilds it with its closure value
    assert "make_adder(c=1.0)" in records["make_adder__locals__add_const", None]["python_source"]
    stats = json.loads((output / "stats.json").read_text())
    assert stats["source"] == "extract" and stats["count"] == 4 and stats["self_contained"]["records"] == 4
    card = (output / "README.md").read_text()
    assert "configs:" in card and "data/train-*.jsonl" in card


def test_folder_target_reports_broken_modules_and_goes_on(tmp_path, capfd):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text(KERNELS)
    (tmp_path / "pkg" / "sub" / "b.py").write_text(OTHER)
    (tmp_path / "pkg" / "broken.py").write_text("import not_a_module_anywhere\n")
    output = tmp_path / "ds"
    # modules are imported in worker processes: their messages reach the file descriptors
    code, out, err = run_extract([str(tmp_path / "pkg"), "--device", "cuda", "-o", str(output), "--validate", "none"],
                                 capfd)
    assert code == 0
    records = read_dataset(output)
    assert sorted(r["kernel_name"] for r in records) == \
        ["fill", "fill", "halve", "make_adder__locals__add_const", "negate"]
    assert all(r["cpu_forward"] is None and r["cuda_forward"] for r in records)
    # a.py turns backward off globally; the change is undone before sub/b.py is imported
    (negate,) = [r for r in records if r["kernel_name"] == "negate"]
    assert negate["cuda_backward"] and negate["metadata"]["config_changes"] == {}
    assert "import failed" in err and "not_a_module_anywhere" in err
    assert "2 imported, 1 failed to import" in out.splitlines()[-1]
    stats = json.loads((output / "stats.json").read_text())
    assert stats["rejects"]["import failed"] == 1


def test_several_targets_compiled_deduplicated_and_the_same_for_any_worker_count(tmp_path, capsys):
    """Two targets naming one file twice and a copy of a kernel: each concrete kernel once."""
    (tmp_path / "a.py").write_text(KERNELS)
    (tmp_path / "b.py").write_text(OTHER)
    (tmp_path / "c.py").write_text(OTHER)  # the same kernel in another file: a duplicate by content
    outputs = []
    for workers in ("1", "2"):
        output = tmp_path / f"ds{workers}"
        code, out, err = run_extract([str(tmp_path / "a.py"), str(tmp_path), "-o", str(output), "--workers", workers,
                                      "--device", "cpu", "--shard-size", "2"], capsys)
        assert code == 0, err
        outputs.append(read_dataset(output))
    assert outputs[0] == outputs[1]
    names = sorted(r["kernel_name"] for r in outputs[0])
    assert names == ["fill", "fill", "halve", "make_adder__locals__add_const", "negate"]
    assert all(r["validation"] == {"cpu": "compiled"} for r in outputs[0])
    assert len(list((tmp_path / "ds1" / "data").glob("train-*.jsonl"))) == 3
    # a finished run keeps its records once: in the shards, not in the work parts
    assert not list((tmp_path / "ds1" / ".jit-synth" / "parts").glob("*.jsonl"))
    code, out, err = run_extract([str(tmp_path / "a.py"), str(tmp_path), "-o", str(tmp_path / "ds1"), "--device", "cpu",
                                  "--shard-size", "2", "--resume"], capsys)
    assert code == 0 and "complete already" in out
    assert read_dataset(tmp_path / "ds1") == outputs[0]
    from jit.code.checks import dataset as validate

    problems, bad, n = validate.check_dataset(str(tmp_path / "ds1"))
    assert not problems and n == 5


def test_package_target_through_the_console_script(tmp_path):
    package = tmp_path / "mypkg"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "ops.py").write_text(OTHER)
    output = tmp_path / "ds"
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "jit.cli", "extract", "mypkg", "--device", "cpu",
                             "--output", str(output), "--validate", "none", "--workers", "1"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    (record,) = read_dataset(output)
    assert record["kernel_name"] == "negate" and record["metadata"]["module"] == "mypkg.inner.ops"
    assert record["cuda_forward"] is None and "negate_" in record["cpu_forward"]


@pytest.mark.parametrize("argv, message", [
    (["no/such/file.py"], "no such file or folder"),
    (["no_such_module_xyz"], "no such file, folder or module"),
    (["no_such_module_xyz.sub"], "cannot import"),
    (["warp", "--device", "gpu"], "invalid choice"),
    (["warp", "--splits", "train=2"], "--splits"),
])
def test_bad_input_exits_2_with_one_line(argv, message, tmp_path, capsys):
    output = tmp_path / "ds"
    try:
        code, out, err = run_extract([*argv, "--output", str(output)], capsys)
    except SystemExit as exc:  # argparse's own errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err
    assert list(tmp_path.iterdir()) == []


def test_jsonl_output_is_refused_with_a_hint(tmp_path, capsys):
    (tmp_path / "x.py").write_text(OTHER)
    code, out, err = run_extract([str(tmp_path / "x.py"), "--output", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and "give a dataset folder" in err and not (tmp_path / "o.jsonl").exists()


def test_jit_synth_cli_wires_extract(tmp_path, capsys):
    from jit import cli

    parser = cli.build_parser()
    args = parser.parse_args(["extract", str(tmp_path / "x.py"), "--output", str(tmp_path / "o")])
    assert args.run is extract.run
    (tmp_path / "x.py").write_text(OTHER)
    assert cli.main(["extract", str(tmp_path / "x.py"), "--output", str(tmp_path / "o"), "--validate", "none",
                     "--workers", "1", "-q"]) == 0
    assert [r["kernel_name"] for r in read_dataset(tmp_path / "o")] == ["negate"]


def test_overload_kept_in_a_variable_is_one_record(tmp_path, capsys):
    source = tmp_path / "kept.py"
    source.write_text(KERNELS + "\nFILL_F32 = wp.overload(fill, {'a': wp.array(dtype=float), 'v': float})\n")
    code, out, err = run_extract([str(source), "--output", str(tmp_path / "o"), "--validate", "none"], capsys)
    assert code == 0, err
    names = [r["kernel_name"] for r in read_dataset(tmp_path / "o")]
    assert names.count("fill") == 2 and len(names) == 4


def test_help_is_the_module_docstring(capsys):
    with pytest.raises(SystemExit) as done:
        extract.main(["--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert "Each TARGET is a path to a .py file" in help_text and "--device" in help_text and "--splits" in help_text


def test_a_module_that_kills_its_process_costs_only_its_part(tmp_path, monkeypatch, capfd):
    """Real code can end the interpreter that imports it; the run goes on and says so."""
    (tmp_path / "a_killer.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "b_good.py").write_text(OTHER)
    monkeypatch.setattr(discover, "MODULES_PER_PART", 1)
    output = tmp_path / "ds"
    code, out, err = run_extract([str(tmp_path / "a_killer.py"), str(tmp_path / "b_good.py"), "-o", str(output),
                                  "--validate", "none", "--workers", "2"], capfd)
    assert code == 0, err
    assert [r["kernel_name"] for r in read_dataset(output)] == ["negate"]
    assert "worker process died (exit code 3)" in err
    stats = json.loads((output / "stats.json").read_text())
    assert stats["rejects"] == {"worker process died (exit code 3)": 1}


WRAPPED_HELPER = '''import warp as wp


@wp.func
def velocity_at_point(qd: wp.spatial_vector, r: wp.vec3) -> wp.vec3:
    """Velocity of an offset point for twists stored (v, w); Warp's own takes (w, v)."""
    return wp.velocity_at_point(wp.spatial_vector(wp.spatial_bottom(qd), wp.spatial_top(qd)), r)


@wp.kernel
def {name}(qd: wp.array(dtype=wp.spatial_vector), r: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = {scale}velocity_at_point(qd[i], r[i])
'''


def test_validate_agrees_with_the_run_on_records_that_share_helper_names(tmp_path, capfd):
    """Helpers named like a Warp function (newton's velocity_at_point wraps wp.velocity_at_point),
    in several records: every record compiled when extracted, so validate must pass them all, quietly."""
    from jit.code.commands import validate

    for name, scale in (("point_velocity", ""), ("contact_velocity", "2.0 * "), ("reflected_velocity", "-")):
        (tmp_path / f"{name}.py").write_text(WRAPPED_HELPER.format(name=name, scale=scale))
    out = tmp_path / "ds"
    code = extract.main([str(tmp_path), "-o", str(out), "--device", "cpu", "--workers", "1", "-q"])
    assert code == 0 and len(read_dataset(out)) == 3
    capfd.readouterr()
    assert validate.main([str(out)]) == 0
    printed, noise = capfd.readouterr()
    assert "ok: 3 records valid" in printed and "retrying" not in noise + printed and "error" not in noise
