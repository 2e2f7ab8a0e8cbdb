"""``jit-synth export``: chat-format SFT examples per split, checked against the dataset re-read."""

from __future__ import annotations

import json
import os
import random

import pytest

from jit.code import export
from jit.code.commands import export as export_command
from jit.code.engine import writers
from jit.code.analysis.token_stats import count_tokens

ROLES = ["system", "user", "assistant"]
BUILTINS = ["sin", "cos", "exp", "log", "sqrt", "abs", "floor", "ceil", "tanh", "atan2", "min", "max", "clamp",
            "length", "normalize", "dot", "cross", "pow", "sign", "step"]


def _expr(rng: random.Random, depth: int) -> str:
    """A random expression, so that kernels differ in their token 4-grams (no near-duplicates)."""
    shape = rng.randrange(4 if depth else 2)
    if shape == 0:
        return f"{rng.random():.2f}"
    if shape == 1:
        return f"x[{rng.randrange(9)}]"
    if shape == 2:
        return f"wp.{rng.choice(BUILTINS)}({_expr(rng, depth - 1)})"
    return f"({_expr(rng, depth - 1)} {rng.choice('+-*/%')} {_expr(rng, depth - 1)})"


def _record(i: int, rng: random.Random, helpers: str | None, cuda: bool = True, ptx: bool = False) -> dict:
    body = "\n".join(f"    v{k} = {_expr(rng, 3)}  # ü {{code}}" for k in range(rng.randint(8, 40)))
    rec = {
        "id": f"rec{i:03d}", "kernel_name": f"k{i}", "category": "test",
        "python_source": f"import warp as wp\n\n@wp.kernel\ndef k{i}(x: wp.array(dtype=float)):\n{body}\n",
        "cpu_forward": f"void k{i}_cpu_kernel_forward() {{ {' '.join(['x;'] * rng.randint(1, 300))} }}\n",
        "cpu_backward": None, "cuda_forward": None, "cuda_backward": None,
        "cpu_functions": helpers, "cuda_functions": None, "validation": {}, "metadata": {"index": i},
    }
    if cuda:
        body = "  y += 1;" * rng.randint(1, 300)
        rec["cuda_forward"] = f"\nextern \"C\" __global__ void k{i}_cuda_kernel_forward() {{\n{body}\n}}\n\n"
        rec["cuda_backward"] = rec["cuda_forward"].replace("forward", "backward")
        rec["cuda_functions"] = helpers
    if ptx:
        rec["cuda_ptx"] = f".visible .entry k{i}_cuda_kernel_forward()\n{{\n\tret;\n}}\n"
    return rec


def _records(n: int, seed: int, **kw) -> list[dict]:
    rng = random.Random(seed)
    helpers = [None, "", "  \n", "\nstatic CUDA_CALLABLE float helper_0(float x)\n{\n    return x * 2.0f;\n}\n\n"]
    return [_record(seed * 100 + i, rng, helpers[i % len(helpers)], **kw) for i in range(n)]


def _dataset(folder, train: list[dict], validation: list[dict] = ()) -> str:
    writers.write_shards(str(folder), train, len(train), 5, "jsonl")
    if validation:  # a second split, named as the writers name split shards
        path = os.path.join(folder, "data", "validation-00000-of-00001.jsonl")
        writers.write_atomic(path, "".join(writers.dumps(r) + "\n" for r in validation))
    return str(folder)


def _read_dataset(folder) -> dict[str, dict]:
    records = {}
    for name in sorted(os.listdir(os.path.join(folder, "data"))):
        for _, rec, _ in writers.read_records(os.path.join(folder, "data", name)):
            records[rec["id"]] = rec
    return records


def _lines(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _helpers_then(rec: dict, helpers: str, main: str) -> str:
    """The documented composition: the helper field, a newline, the main field; helpers left out when blank."""
    h = rec.get(helpers)
    return f"{h}\n{rec[main]}" if h and h.strip() else rec[main]


@pytest.fixture
def ds(tmp_path):
    train = _records(12, 1) + [_record(999, random.Random(9), None, cuda=False)]  # one CPU-only record
    return _dataset(tmp_path / "ds", train, _records(4, 2))


def test_py2cuda_examples_carry_the_full_python_and_the_stored_cuda_verbatim(ds, tmp_path, capsys):
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(out)]) == 0
    stored = _read_dataset(ds)
    seen = {}
    for split in ("train", "validation"):
        for ex in _lines(out / f"{split}.jsonl"):
            rec = stored[ex["id"]]
            assert [m["role"] for m in ex["messages"]] == ROLES
            system, user, assistant = (m["content"] for m in ex["messages"])
            assert system == export.SYSTEM
            assert rec["python_source"] in user
            assert assistant == _helpers_then(rec, "cuda_functions", "cuda_forward")
            seen[ex["id"]] = split
    with_cuda = {i for i, r in stored.items() if r["cuda_forward"]}
    assert set(seen) == with_cuda
    assert sum(1 for s in seen.values() if s == "validation") == 4
    summary = json.loads((out / "export.json").read_text())
    assert summary["examples"] == {"train": 12, "validation": 4}
    assert summary["dropped"] == {"missing_cuda_forward": 1}
    assert summary["task"] == "py2cuda" and "{python_source}" in summary["template"]


def test_cuda2py_reverses_the_pair(ds, tmp_path):
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", "cuda2py", "--output", str(out), "--system", ""]) == 0
    stored = _read_dataset(ds)
    examples = _lines(out / "train.jsonl")
    assert len(examples) == 12
    for ex in examples:
        rec = stored[ex["id"]]
        assert [m["role"] for m in ex["messages"]] == ROLES[1:]  # --system '' leaves the turn out
        user, assistant = (m["content"] for m in ex["messages"])
        assert _helpers_then(rec, "cuda_functions", "cuda_forward") in user
        assert assistant == rec["python_source"]


@pytest.mark.parametrize("task, helpers, main", [("py2cpp", "cpu_functions", "cpu_forward"),
                                                 ("py2cuda-adjoint", "cuda_functions", "cuda_backward")])
def test_other_code_tasks(ds, tmp_path, task, helpers, main):
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", task, "--output", str(out)]) == 0
    stored = _read_dataset(ds)
    examples = _lines(out / "train.jsonl") + _lines(out / "validation.jsonl")
    assert {ex["id"] for ex in examples} == {i for i, r in stored.items() if r[main]}
    for ex in examples:
        assert ex["messages"][2]["content"] == _helpers_then(stored[ex["id"]], helpers, main)


def test_py2ptx_needs_ptx(tmp_path, capsys):
    ds = _dataset(tmp_path / "ds", _records(6, 3))
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", "py2ptx", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jit-synth export: error:") and "--emit-ptx" in err
    assert not out.exists() or not os.listdir(out)  # nothing written half-way

    with_ptx = _records(3, 4, ptx=True)
    ds = _dataset(tmp_path / "ds2", _records(6, 3) + with_ptx)
    assert export_command.main([ds, "--task", "py2ptx", "--output", str(out)]) == 0
    examples = _lines(out / "train.jsonl")
    assert [ex["messages"][2]["content"] for ex in examples] == [r["cuda_ptx"] for r in with_ptx]
    assert json.loads((out / "export.json").read_text())["dropped"] == {"missing_cuda_ptx": 6}


def _tiny_tokenizer(path, texts):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["[UNK]"]))
    tok.save(str(path))
    return tokenizers.Tokenizer.from_file(str(path))


def test_max_tokens_with_a_real_tokenizer_file(ds, tmp_path):
    full = tmp_path / "full"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(full)]) == 0
    examples = {s: _lines(full / f"{s}.jsonl") for s in ("train", "validation")}
    texts = [m["content"] for exs in examples.values() for ex in exs for m in ex["messages"]]
    tok = _tiny_tokenizer(tmp_path / "tokenizer.json", texts)
    length = {ex["id"]: sum(len(tok.encode(m["content"], add_special_tokens=False).ids) for m in ex["messages"])
              for exs in examples.values() for ex in exs}
    limit = sorted(length.values())[len(length) // 2]
    expected_kept = {s: sum(length[ex["id"]] <= limit for ex in exs) for s, exs in examples.items()}

    out = tmp_path / "cut"
    argv = [ds, "--task", "py2cuda", "--output", str(out), "--max-tokens", str(limit),
            "--tokenizer", str(tmp_path / "tokenizer.json")]
    assert export_command.main(argv) == 0
    summary = json.loads((out / "export.json").read_text())
    assert summary["dropped"]["too_long"] == sum(length[i] > limit for i in length) > 0
    assert summary["examples"] == expected_kept
    assert summary["tokenizer"].startswith("tokenizers:")
    assert all(length[ex["id"]] <= limit for ex in _lines(out / "train.jsonl"))


def test_max_tokens_without_a_tokenizer_uses_the_estimate(ds, tmp_path):
    full = tmp_path / "full"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(full)]) == 0
    lengths = [sum(count_tokens(m["content"]) for m in ex["messages"])
               for s in ("train", "validation") for ex in _lines(full / f"{s}.jsonl")]
    limit = sorted(lengths)[len(lengths) // 3]
    out = tmp_path / "cut"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(out), "--max-tokens", str(limit)]) == 0
    summary = json.loads((out / "export.json").read_text())
    assert summary["dropped"]["too_long"] == sum(n > limit for n in lengths)


def test_loads_with_datasets(ds, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(out)]) == 0
    loaded = datasets.load_dataset("json", data_files={s: str(out / f"{s}.jsonl") for s in ("train", "validation")},
                                   cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == {"train": 12, "validation": 4}
    assert [m["role"] for m in loaded["train"][0]["messages"]] == ROLES


def test_show_template_needs_no_dataset(capsys):
    assert export_command.main(["--show-template", "--task", "cuda2py"]) == 0
    text = capsys.readouterr().out
    assert "{cuda_functions} + '\\n' + {cuda_forward}" in text and "{python_source}" in text
    assert export_command.main(["--show-template"]) == 0
    assert capsys.readouterr().out.count("--- assistant ---") == len(export.TASKS)


@pytest.mark.parametrize("argv, message", [
    (["{missing}", "--task", "py2cuda", "--output", "{out}"], "no records"),
    (["{ds}", "--task", "py2cuda"], "--output is required"),
    (["{ds}", "--task", "py2cuda", "--output", "{out}", "--max-tokens", "0"], "--max-tokens must be at least 1"),
    (["{ds}", "--task", "py2cuda", "--output", "{out}", "--max-tokens", "2k"], "whole number"),
    (["{ds}", "--task", "py2rust", "--output", "{out}"], "invalid choice"),
    (["{ds}", "--task", "py2cuda", "--output", "{out}", "--max-tokens", "1"], "raise --max-tokens"),
])
def test_bad_input_is_one_line_and_exit_2(ds, tmp_path, capsys, argv, message):
    names = {"ds": ds, "out": str(tmp_path / "sft"), "missing": str(tmp_path / "nowhere")}
    argv = [a.format(**names) for a in argv]
    try:
        code = export_command.main(argv)
    except SystemExit as exc:  # argparse rejects the value itself
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err
    assert not (tmp_path / "sft").exists() or not os.listdir(tmp_path / "sft")


def test_a_tokenizer_that_cannot_load_is_one_line(ds, tmp_path, capsys):
    pytest.importorskip("tokenizers")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(tmp_path / "o"), "--max-tokens", "9",
                        "--tokenizer", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot load" in err


def test_a_split_gone_from_the_dataset_is_removed_from_the_output(tmp_path):
    out = tmp_path / "sft"
    assert export_command.main([_dataset(tmp_path / "a", _records(3, 5), _records(2, 6)), "--task", "py2cuda", "--output", str(out)]) == 0
    assert (out / "validation.jsonl").exists()
    assert export_command.main([_dataset(tmp_path / "b", _records(3, 5)), "--task", "py2cuda", "--output", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["export.json", "train.jsonl"]


def test_exclude_drops_records_near_an_evaluation_set(tmp_path, capsys):
    records = _records(10, 7)
    ds = _dataset(tmp_path / "ds", records)
    evaluation = tmp_path / "eval"
    evaluation.mkdir()
    (evaluation / "copy.py").write_text(records[2]["python_source"])
    (evaluation / "edited.py").write_text(records[5]["python_source"] + "# edited\nEXTRA = 1\n")
    out = tmp_path / "sft"
    assert export_command.main([ds, "--task", "py2cuda", "--output", str(out), "--exclude", str(evaluation)]) == 0
    kept = {ex["id"] for ex in _lines(out / "train.jsonl")}
    assert kept == {r["id"] for r in records} - {records[2]["id"], records[5]["id"]}
    assert json.loads((out / "export.json").read_text())["dropped"] == {"excluded": 2}

    assert export_command.main([ds, "--task", "py2cuda", "--output", str(out), "--exclude", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
