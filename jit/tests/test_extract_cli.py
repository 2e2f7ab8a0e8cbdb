"""``jit-synth extract``: files, folders and packages in, JSONL out; bad input exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from jit.code.extraction import discover
from jit.code.dataset.records import FIELDS, content_id

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


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_extract(argv, capsys) -> tuple[int, str, str]:
    code = discover.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_file_target_gives_one_record_per_concrete_kernel(tmp_path, capsys):
    source = tmp_path / "kernels.py"
    source.write_text(KERNELS)
    output = tmp_path / "out" / "pairs.jsonl"
    code, out, err = run_extract([str(source), "--device", "both", "--output", str(output)], capsys)
    assert code == 0, err
    records = {(r["kernel_name"], r["metadata"]["overload_signature"]): r for r in read_jsonl(output)}
    assert [name for name, _ in records] == ["halve", "fill", "fill", "make_adder__locals__add_const"]
    assert out.strip().splitlines()[-1] == ("modules: 1 imported, 0 failed to import; "
                                            "kernels: 4 found, 4 extracted, 0 failed")
    for record in records.values():
        assert set(FIELDS) <= set(record) and record["category"] == "extracted"
        assert record["metadata"]["file"] == str(source.resolve())
        assert "blockIdx" in record["cuda_forward"] and "blockIdx" not in record["cpu_forward"]
        assert record["cpu_forward"].startswith("struct wp_args_")
        # Warp copies wp.config.enable_backward into the module when its first kernel is defined,
        # so a launch of these kernels has no backward: neither has the record
        assert record["cpu_backward"] is None and record["cuda_backward"] is None
        assert record["metadata"]["devices"]["cuda"]["enable_backward"] is False
        assert record["metadata"]["config_changes"] == {"enable_backward": False}
    assert len({r["id"] for r in records.values()}) == 4

    halve = records["halve", None]
    assert halve["id"] == content_id(halve["python_source"])
    assert halve["python_source"].index("def half(") < halve["python_source"].index("def halve(")
    assert "half_0(" in halve["cpu_functions"] and "half_0(" in halve["cuda_functions"]
    assert "adj_half_0(" not in halve["cuda_functions"]  # backward off: Warp emits no adjoint
    assert "# } a brace in a comment" in halve["cuda_functions"]
    assert halve["metadata"]["helpers"] == ["half"]
    devices = halve["metadata"]["devices"]
    assert (devices["cpu"]["block_dim"], devices["cuda"]["block_dim"]) == (1, 256)


def test_folder_target_reports_broken_modules_and_goes_on(tmp_path, capsys):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text(KERNELS)
    (tmp_path / "pkg" / "sub" / "b.py").write_text(OTHER)
    (tmp_path / "pkg" / "broken.py").write_text("import not_a_module_anywhere\n")
    output = tmp_path / "pairs.jsonl"
    code, out, err = run_extract([str(tmp_path / "pkg"), "--device", "cuda", "-o", str(output)], capsys)
    assert code == 0
    records = read_jsonl(output)
    assert sorted(r["kernel_name"] for r in records) == \
        ["fill", "fill", "halve", "make_adder__locals__add_const", "negate"]
    assert all(r["cpu_forward"] is None and r["cuda_forward"] for r in records)
    # a.py turns backward off globally; the change is undone before sub/b.py is imported
    (negate,) = [r for r in records if r["kernel_name"] == "negate"]
    assert negate["cuda_backward"] and negate["metadata"]["config_changes"] == {}
    assert "import failed" in err and "not_a_module_anywhere" in err
    assert "2 imported, 1 failed to import" in out.splitlines()[-1]


def test_package_target_through_the_console_script(tmp_path):
    package = tmp_path / "mypkg"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "ops.py").write_text(OTHER)
    output = tmp_path / "pairs.jsonl"
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "jit.code.extraction.discover", "mypkg", "--device", "cpu",
                             "--output", str(output)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    (record,) = read_jsonl(output)
    assert record["kernel_name"] == "negate" and record["metadata"]["module"] == "mypkg.inner.ops"
    assert record["cuda_forward"] is None and "negate_" in record["cpu_forward"]


@pytest.mark.parametrize("argv, message", [
    (["no/such/file.py"], "no such file or folder"),
    (["no_such_module_xyz"], "no such file, folder or module"),
    (["no_such_module_xyz.sub"], "cannot import"),
    (["warp", "--device", "gpu"], "unknown --device"),
])
def test_bad_input_exits_2_with_one_line(argv, message, tmp_path, capsys):
    output = tmp_path / "pairs.jsonl"
    code, out, err = run_extract([*argv, "--output", str(output)], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_failed_run_leaves_no_partial_file(tmp_path, monkeypatch, capsys):
    source = tmp_path / "kernels.py"
    source.write_text(KERNELS)
    output = tmp_path / "pairs.jsonl"

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(discover, "make_pair", boom)
    with pytest.raises(KeyboardInterrupt):
        discover.main([str(source), "--output", str(output)])
    assert list(tmp_path.iterdir()) == [source]


def test_jit_synth_cli_wires_extract(tmp_path, capsys):
    from jit import cli

    parser = cli.build_parser()
    args = parser.parse_args(["extract", str(tmp_path / "x.py"), "--output", str(tmp_path / "o.jsonl")])
    assert args.run is discover.run
    (tmp_path / "x.py").write_text(OTHER)
    assert cli.main(["extract", str(tmp_path / "x.py"), "--output", str(tmp_path / "o.jsonl")]) == 0
    assert [r["kernel_name"] for r in read_jsonl(tmp_path / "o.jsonl")] == ["negate"]


def test_overload_kept_in_a_variable_is_one_record(tmp_path, capsys):
    source = tmp_path / "kept.py"
    source.write_text(KERNELS + "\nFILL_F32 = wp.overload(fill, {'a': wp.array(dtype=float), 'v': float})\n")
    output = tmp_path / "pairs.jsonl"
    code, out, err = run_extract([str(source), "--output", str(output)], capsys)
    assert code == 0, err
    names = [r["kernel_name"] for r in read_jsonl(output)]
    assert names.count("fill") == 2 and len(names) == 4


def test_help_is_the_module_docstring(capsys):
    with pytest.raises(SystemExit) as done:
        discover.main(["--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert "TARGET is a path to a .py file" in help_text and "--device" in help_text
