"""Build a tiny random Qwen2 chat model that vLLM can serve on a CPU, with no network.

Runs inside the vLLM venv's interpreter (it needs torch, transformers and tokenizers, which the
project's own venv does not carry): ``<venv>/bin/python tests/vllm/tiny_model.py OUT --corpus DIR``.
The weights are random, so answers are noise; that is enough to test the serving path, because
structured output forces every answer into the schema whatever the logits say. The tokenizer is
a byte-level BPE, so any text (JSON, IDs, code) can be encoded.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
MAX_CORPUS_BYTES = 4_000_000


def corpus(roots: list[Path]) -> Iterator[str]:
    """Python files under ``roots`` (bounded), plus the JSON shapes a ranking answer takes."""
    budget = MAX_CORPUS_BYTES
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            budget -= len(text)
            if budget < 0:
                return
            yield text
    yield '{"faulty_functions":["main"],"faulty_blocks":["BLOCK 1","BLOCK 2"],"faulty_lines":["17","23"]}'


def build(out: Path, roots: list[Path], vocab_size: int, seed: int) -> dict[str, object]:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    started = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(roots), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        model_max_length=2048,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(out)

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        dtype="bfloat16",
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    model.save_pretrained(out, safe_serialization=True)
    return {
        "dir": str(out),
        "vocab_size": len(tokenizer),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write the model and tokenizer into")
    parser.add_argument("--corpus", type=Path, action="append", required=True, help="folder of .py files")
    parser.add_argument("--vocab-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(build(args.out, args.corpus, args.vocab_size, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
