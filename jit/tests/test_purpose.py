"""A kernel's purpose: from its author's docstring or leading comment for real code, and the
purpose2py export task that asks for the kernel given what it is for."""

from __future__ import annotations

import json

import pytest

from jit.code.analysis.purpose import purpose_of
from jit.code.commands import export as export_command
from jit.code.commands import extract
from jit.code.engine import writers

HEAD = "import warp as wp\n\n"
KERNEL = "@wp.kernel\ndef integrate(x: wp.array(dtype=wp.vec3), dt: float):\n"


@pytest.mark.parametrize("source, purpose", [
    (HEAD + KERNEL + '    """Advance positions by ``dt`` (see :func:`step`).\n\n    Details.\n    """\n    i = wp.tid()\n',
     "Advance positions by dt (see step)."),
    (HEAD + "# Integrate positions.\n# Gravity is not applied here.\n" + KERNEL + "    i = wp.tid()\n",
     "Integrate positions. Gravity is not applied here."),
    (HEAD + KERNEL + "    # clear the accumulators\n    i = wp.tid()\n", "clear the accumulators"),
    (HEAD + "X = 1.0\n\n" + KERNEL + "    i = wp.tid()\n", None),
    (HEAD + KERNEL + '    """' + "word " * 200 + '"""\n    i = wp.tid()\n', ("word " * 80).strip() + " ..."),
])
def test_purpose_is_the_authors_own_words(source, purpose):
    assert purpose_of(source, "integrate") == purpose


def test_extracted_records_carry_the_docstring_as_purpose(tmp_path, capsys):
    (tmp_path / "k.py").write_text(
        HEAD + KERNEL + '    """Explicit Euler step of particle positions."""\n    i = wp.tid()\n    x[i] = x[i] * dt\n\n\n'
        + "@wp.kernel\ndef scale(a: wp.array(dtype=float)):\n    i = wp.tid()\n    a[i] = a[i] * 2.0\n")
    assert extract.main([str(tmp_path / "k.py"), "-o", str(tmp_path / "ds"), "--validate", "none",
                         "--workers", "1", "-q"]) == 0
    purposes = {r["kernel_name"]: r["metadata"].get("purpose") for r in writers.read_dataset(str(tmp_path / "ds"))}
    assert purposes == {"integrate": "Explicit Euler step of particle positions.", "scale": None}


def test_purpose2py_asks_for_the_kernel_that_does_what_the_record_says(tmp_path, capsys):
    records = [{"id": f"r{i}", "kernel_name": f"k{i}", "category": "c", "python_source": f"# kernel {i}\n",
                "metadata": {"purpose": f"Purpose number {i}."} if i % 2 == 0 else {}} for i in range(6)]
    writers.write_shards(str(tmp_path / "ds"), records, len(records), 10, "jsonl")
    assert export_command.main([str(tmp_path / "ds"), "--task", "purpose2py", "--output", str(tmp_path / "sft")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["r0", "r2", "r4"]
    for line, i in zip(lines, (0, 2, 4)):
        user, answer = line["messages"][-2]["content"], line["messages"][-1]["content"]
        assert user.endswith(f"Purpose number {i}.") and answer == f"# kernel {i}\n"
    summary = json.loads((tmp_path / "sft" / "export.json").read_text())
    assert summary["dropped"] == {"missing_metadata.purpose": 3}
