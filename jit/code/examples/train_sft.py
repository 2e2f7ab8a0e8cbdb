"""Fine-tune a causal language model on `jit-synth export` output with TRL's SFTTrainer.

    pip install 'warp-jit-synth[train]'
    jit-synth export out/ds --task py2cuda --output out/sft --max-tokens 4096
    # on a GPU, a real code model (downloaded from the hub):
    python jit/code/examples/train_sft.py out/sft --model Qwen/Qwen2.5-Coder-0.5B-Instruct --max-steps 500
    # on a CPU, a smoke run: a random 2-layer GPT-2 and a tokenizer trained on the examples, no download:
    python jit/code/examples/train_sft.py out/sft --tiny --max-steps 2

Reads SFT_DIR/train.jsonl (and validation.jsonl when present) with `datasets`, trains for
--max-steps and saves the model to --output. The loss covers the whole conversation, truncated
to --max-length tokens. What it leaves out: choosing hyper-parameters, evaluation, LoRA.
"""

from __future__ import annotations

import argparse
import os
import sys

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def load_splits(sft_dir: str):
    import datasets

    files = {split: os.path.join(sft_dir, f"{split}.jsonl") for split in ("train", "validation")}
    return datasets.load_dataset("json", data_files={s: p for s, p in files.items() if os.path.exists(p)})


def tiny_model(texts, max_length: int):
    """A random 2-layer GPT-2 and a 1,000-token byte-level BPE trained on ``texts``: for a CPU smoke run."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=1000, special_tokens=specials,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = CHATML
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=max_length, n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    return GPT2LMHeadModel(config), tokenizer


def train(sft_dir: str, model: str | None, output: str, max_steps: int, max_length: int, batch_size: int) -> dict:
    import torch
    from trl import SFTConfig, SFTTrainer

    data = load_splits(sft_dir)
    tokenizer = None
    if model is None:
        sample = data["train"].select(range(min(200, data["train"].num_rows)))
        texts = (m["content"] for ex in sample for m in ex["messages"])
        model, tokenizer = tiny_model(texts, max_length)
    config = SFTConfig(output_dir=output, max_steps=max_steps, max_length=max_length,
                       per_device_train_batch_size=batch_size, gradient_accumulation_steps=1, learning_rate=2e-5,
                       logging_steps=1, save_strategy="no", report_to="none",
                       bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
                       use_cpu=not torch.cuda.is_available())
    trainer = SFTTrainer(model=model, args=config, train_dataset=data["train"],
                         eval_dataset=data["validation"] if "validation" in data else None, processing_class=tokenizer)
    result = trainer.train()
    trainer.save_model(output)
    return {"steps": result.global_step, "train_loss": result.training_loss}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sft_dir", metavar="SFT_DIR", help="a `jit-synth export` output folder")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="hub name or local folder of a causal language model")
    which.add_argument("--tiny", action="store_true", help="a random 2-layer model, for a CPU smoke run")
    p.add_argument("--output", default="out/sft-model", help="where to save the model (default out/sft-model)")
    p.add_argument("--max-steps", type=int, default=100, help="optimizer steps (default 100)")
    p.add_argument("--max-length", type=int, default=4096, help="tokens per example; longer are truncated (default 4096)")
    p.add_argument("--batch-size", type=int, default=1, help="examples per step (default 1)")
    args = p.parse_args(argv)
    try:
        import trl  # noqa: F401
    except ImportError:
        p.exit(2, f"{p.prog}: error: needs TRL: pip install 'warp-jit-synth[train]'\n")
    result = train(args.sft_dir, args.model, args.output, args.max_steps, args.max_length, args.batch_size)
    print(f"trained {result['steps']} steps, loss {result['train_loss']:.4f}; model saved to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
