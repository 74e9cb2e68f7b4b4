"""Retrieval quality on a labelled query set built from the synthetic world (seed 001 queries).

    .venv/bin/python benchmarks/retrieval_quality.py [--lake data_lake] [--per-kind 25]

Needs a lake built by `make demo` (the embedded world). Relevant passages are known there:

* metric   — "<TICKER> <metric> <fiscal period>": that company's filing passages for that period
             that state the metric (MD&A section, earnings-release exhibit);
* compare  — "Compare <metric>s across A, B, C, D and E in <period>": each company's such passages;
* guidance — "What did <Company> say about guidance?": that company's passages of the last 180
             days that talk about guidance or outlook;
* risk     — "risks in <Company>'s latest 10-K": Item 1A passages of its latest 10-K;
* event    — "<Company> <short event description>": the news and filings the world generated for
             that event (anchor, re-reports, companion news, the event's 8-K), from the planted truth.

Reports nDCG@10 and Recall@20 (binary relevance) for BM25 only, dense only, hybrid (equal-weight
min-max fusion) and hybrid + RRF + rerank (the full seed 001 pipeline), per kind and overall.
Every query is run "as of" a date, on the evidence public before it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_dagster.core.lake import Lake  # noqa: E402
from finrag_dagster.core.retrieval.engine import SearchEngine  # noqa: E402
from finrag_dagster.core.retrieval.search import SearchConfig  # noqa: E402

MODES = ("bm25", "dense", "hybrid", "full")
MODE_NAMES = {"bm25": "BM25 only", "dense": "dense only", "hybrid": "hybrid (min-max)", "full": "hybrid + RRF + rerank"}
METRIC_PHRASES = {"gross margin": "gross margin", "operating margin": "operating margin", "revenue": "revenue", "diluted EPS": "diluted"}


def ndcg_at(ranked: list[str], rel: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, p in enumerate(ranked[:k]) if p in rel)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(rel))))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], rel: set[str], k: int = 20) -> float:
    return len(set(ranked[:k]) & rel) / len(rel) if rel else 0.0


def build_queries(ev: pl.DataFrame, truth_docs: pl.DataFrame | None, events: pl.DataFrame | None, universe: pl.DataFrame,
                  as_of: dt.date, per_kind: int, rng: np.random.Generator) -> list[dict]:
    cutoff = dt.datetime.combine(as_of, dt.time(23, 59), tzinfo=dt.timezone.utc)
    vis = ev.filter(pl.col("public_time") < cutoff)
    names = dict(zip(universe["ticker"], universe["company"]))
    short = {t: (a.split("|")[-1] if a else names[t]) for t, a in zip(universe["ticker"], universe["aliases"])}
    fil = vis.filter(pl.col("source_family") == "sec_filing")
    low = fil.with_columns(pl.col("text").str.to_lowercase().alias("low"))
    qs: list[dict] = []
    # metric queries
    periods = low.filter(pl.col("form_type").is_in(["10-Q", "10-K"]) & pl.col("fiscal_period").is_not_null())
    cand = periods.select("ticker", "fiscal_period").unique().sort(["ticker", "fiscal_period"])
    picks = cand.sample(min(per_kind, cand.height), seed=int(rng.integers(1 << 30))) if cand.height else cand
    metrics = list(METRIC_PHRASES)
    for i, r in enumerate(picks.iter_rows(named=True)):
        m = metrics[i % len(metrics)]
        rel = low.filter((pl.col("ticker") == r["ticker"]) & (pl.col("fiscal_period") == r["fiscal_period"]) & pl.col("low").str.contains(METRIC_PHRASES[m]))
        if rel.height:
            qs.append({"kind": "metric", "query": f"{r['ticker']} {m} {r['fiscal_period']}", "rel": set(rel["passage_id"])})
    # comparison queries
    by_period = cand.group_by("fiscal_period").agg(pl.col("ticker")).filter(pl.col("ticker").list.len() >= 5).sort("fiscal_period")
    for i in range(min(per_kind, by_period.height * 3)):
        r = by_period.row(int(rng.integers(by_period.height)), named=True)
        ts = sorted(rng.choice(r["ticker"], size=5, replace=False).tolist())
        m = ("operating margin", "gross margin")[i % 2]
        rel = low.filter(pl.col("ticker").is_in(ts) & (pl.col("fiscal_period") == r["fiscal_period"]) & pl.col("low").str.contains(m))
        if rel.height:
            qs.append({"kind": "compare", "query": f"Compare {m}s across {', '.join(ts[:4])} and {ts[4]} in {r['fiscal_period']}", "rel": set(rel["passage_id"])})
    # guidance queries
    recent = vis.filter(pl.col("public_time") >= cutoff - dt.timedelta(days=180)).with_columns(pl.col("text").str.to_lowercase().alias("low"))
    tick = sorted(set(recent["ticker"].to_list()) - {"QQQ"})
    for t in rng.choice(tick, size=min(per_kind, len(tick)), replace=False).tolist():
        rel = recent.filter((pl.col("ticker") == t) & pl.col("low").str.contains("guidance|outlook"))
        if rel.height:
            qs.append({"kind": "guidance", "query": f"What did {short[t].title()} say about guidance?", "rel": set(rel["passage_id"])})
    # risk queries
    tenk = fil.filter((pl.col("form_type") == "10-K"))
    for t in rng.choice(sorted(set(tenk["ticker"].to_list())), size=min(per_kind, tenk["ticker"].n_unique()), replace=False).tolist():
        g = tenk.filter(pl.col("ticker") == t)
        latest = g.filter(pl.col("public_time") == g["public_time"].max())
        rel = latest.filter(pl.col("item") == "Item 1A")
        if rel.height:
            qs.append({"kind": "risk", "query": f"risks in {short[t].title()}'s latest 10-K", "rel": set(rel["passage_id"])})
    # event queries (planted truth)
    if truth_docs is not None and events is not None:
        ev_vis = events.filter(pl.col("event_time") < cutoff).sort("event_time")
        url_pid = dict(zip(vis["url"], vis["passage_id"]))
        acc_pid = defaultdict(set)
        for d, p in zip(vis["doc_id"], vis["passage_id"]):
            acc_pid[d].add(p)
        take = ev_vis.tail(per_kind * 4).sample(min(per_kind, ev_vis.height), seed=int(rng.integers(1 << 30))) if ev_vis.height else ev_vis
        for e in take.iter_rows(named=True):
            docs = truth_docs.filter((pl.col("event_id") == e["event_id"]) & pl.col("role").is_in(["anchor", "rereport", "companion"]))
            rel = set()
            for k, fam in zip(docs["key"], docs["source_family"]):
                rel |= ({url_pid[k]} if k in url_pid else set()) if fam == "news" else acc_pid.get(k, set())
            head = e.get("anchor_title") or e.get("headline") or ""
            if rel and head:
                qs.append({"kind": "event", "query": head, "rel": rel})
    for q in qs:
        q["as_of"] = as_of
    return qs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", default="data_lake")
    ap.add_argument("--per-kind", type=int, default=25)
    ap.add_argument("--as-of", nargs="*", default=["2019-06-28", "2019-12-31"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lake = Lake(args.lake)
    ev = lake.read("evidence")
    if ev.height == 0:
        raise SystemExit(f"no evidence in {lake.root}: run `make demo` first")
    universe = lake.read("universe")
    truth = lake.root / "_world" / "truth"
    docs = pl.read_parquet(truth / "documents.parquet") if (truth / "documents.parquet").exists() else None
    events = pl.read_parquet(truth / "events.parquet") if (truth / "events.parquet").exists() else None
    rng = np.random.default_rng(args.seed)
    scores: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    n_q = 0
    for a in args.as_of:
        day = dt.date.fromisoformat(a)
        queries = build_queries(ev, docs, events, universe, day, args.per_kind, rng)
        engine = SearchEngine(lake, a, evidence=ev.filter(pl.col("date") <= day + dt.timedelta(days=5)))
        for q in queries:
            for mode in MODES:
                res = engine.search(q["query"], mode=mode, cfg=SearchConfig(k=20))
                ranked = [h.passage_id for h in res.hits]
                s = (ndcg_at(ranked, q["rel"]), recall_at(ranked, q["rel"]))
                scores[(mode, q["kind"])].append(s)
                scores[(mode, "all")].append(s)
            n_q += 1
    kinds = ["metric", "compare", "guidance", "risk", "event", "all"]
    counts = {k: len(scores[("full", k)]) for k in kinds}
    print(f"{n_q} queries over as-of dates {', '.join(args.as_of)} (lake {lake.root})\n")
    print("| method | " + " | ".join(f"{k} (n={counts[k]}) nDCG@10 / R@20" for k in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for mode in MODES:
        cells = []
        for k in kinds:
            v = scores[(mode, k)]
            cells.append(f"{np.mean([x[0] for x in v]):.3f} / {np.mean([x[1] for x in v]):.3f}" if v else "–")
        print(f"| {MODE_NAMES[mode]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
