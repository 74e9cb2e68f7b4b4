"""The transformers reader backend in batches (``reader.batch_size``): left-padded rows give the
answers of one-at-a-time greedy decoding, token counts stop at each row's end token, and a batch
size > 1 is part of the prompt-cache key (a batch changes a row's arithmetic on other hardware).
A tiny random Llama with a word-level tokenizer written here (no download, no real weights).

Pinned to the CPU (float32): which rows of a random model end early depends on the device and
dtype, and on a GPU (bfloat16) none of these did, so the world would not show early-ending rows
there. On an H200 in bfloat16 the batch-of-4 answers equalled the one-at-a-time ones, texts and
token counts (docs/gpu.md)."""

import importlib.util

import pytest

from finrag_dagster.core.reader.backends import BackendConfig, Request, make_backend
from finrag_dagster.core.reader.prompt import Prompt

pytestmark = pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs the `lora` extra (torch, transformers, peft)")


@pytest.fixture(autouse=True)
def _on_the_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny_llama")
    words = ["<pad>", "<unk>", "<s>", "</s>", *[f"w{i}" for i in range(60)], *'{}[]:,"', "system", "user", "assistant"]
    t = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=t, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tok.chat_template = "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}{% if add_generation_prompt %}assistant {% endif %}"
    tok.save_pretrained(d)
    LlamaConfig(
        vocab_size=len(words),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    ).save_pretrained(d)
    return str(d)


def _prompts():
    # prompts of different lengths, so the batch is padded
    return [Prompt("w1 w2", " ".join(f"w{(i * 7 + j) % 60}" for j in range(5 + 3 * i)), [], {}) for i in range(6)]


def test_batches_answer_as_one_at_a_time(tiny_model):
    cfg = dict(backend="transformers", model=tiny_model, dummy_weights=True, max_tokens=12)
    one = make_backend(BackendConfig(**cfg)).generate([Request(p) for p in _prompts()])
    be = make_backend(BackendConfig(**cfg, batch_size=4))
    four = be.generate([Request(p) for p in _prompts()])
    assert be.requests_sent == 6
    assert [g.text for g in four] == [g.text for g in one]
    assert [(g.prompt_tokens, g.output_tokens) for g in four] == [(g.prompt_tokens, g.output_tokens) for g in one]
    assert [g.prompt_tokens for g in one] == [10 + 3 * i for i in range(6)]  # the padding is not counted
    assert any(g.output_tokens < 12 for g in one) and any(g.output_tokens == 12 for g in one)  # some rows end early


def test_batch_size_is_in_the_cache_key_only_when_it_batches():
    assert BackendConfig(backend="transformers").decoding() == BackendConfig(backend="vllm").decoding()
    assert "batch_size" not in BackendConfig(backend="transformers", batch_size=1).decoding()
    assert BackendConfig(backend="transformers", batch_size=8).decoding()["batch_size"] == 8
    assert "batch_size" not in BackendConfig(backend="vllm", batch_size=8).decoding()  # vLLM batches the whole call anyway
