"""The README's training recipe end to end on a CPU: export py2cuda, then two SFTTrainer steps.

Needs TRL (pip install 'warp-jit-synth[train]'); skipped without it. The model is a random
2-layer GPT-2 with a tokenizer trained on the examples, so nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from jit.code.commands import export as export_command
from jit.code.engine import writers

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).resolve().parents[1] / "code" / "examples" / "train_sft.py"


def _load_script():
    """The example script as a module (it is a script the README runs, not a package module)."""
    spec = importlib.util.spec_from_file_location("train_sft", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(i: int) -> dict:
    python = (f"@wp.kernel\ndef scale_{i}(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
              f"    t = wp.tid()\n    y[t] = {i}.0 * x[t]\n")
    cuda = (f'extern "C" __global__ void scale_{i}_cuda_kernel_forward(wp::launch_bounds_t dim, wp::array_t<wp::float32> var_x)\n'
            f"{{\n    var_1 = wp::mul(var_0, {i}.0);\n    wp::array_store(var_y, var_t, var_1);\n}}\n")
    return {"id": f"r{i}", "kernel_name": f"scale_{i}", "category": "test", "python_source": python,
            "cuda_forward": cuda, "cuda_functions": "", "validation": {}, "metadata": {}}


def test_two_sft_steps_on_exported_examples(tmp_path):
    pytest.importorskip("trl", reason="TRL is not installed: pip install 'warp-jit-synth[train]'")
    train_sft = _load_script()

    records = [_record(i) for i in range(12)]
    writers.write_shards(str(tmp_path / "ds"), records, len(records), 100, "jsonl")
    sft = tmp_path / "sft"
    assert export_command.main([str(tmp_path / "ds"), "--task", "py2cuda", "--output", str(sft), "--max-tokens", "4096"]) == 0
    assert json.loads((sft / "export.json").read_text())["examples"] == {"train": 12}

    result = train_sft.train(str(sft), None, str(tmp_path / "model"), max_steps=2, max_length=256, batch_size=2)
    assert result["steps"] == 2 and math.isfinite(result["train_loss"])
    assert (tmp_path / "model" / "config.json").exists()
