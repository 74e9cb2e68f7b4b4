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

    .venv/bin/python benchmarks/retrieval_quality.py --real [--lake .benchmarks/real_lake] [--sample ../shared/data/real]

``--real`` runs the hand-judged query set ``benchmarks/data/real_queries.jsonl`` on the real
development sample instead (not part of the repository: ``--sample <folder>``, else
``$FINRAG_REAL_SAMPLE``, else ``data/real`` in the repository, where configs/real_sample.toml reads
it; a missing sample stops with an error naming the folder) (news_event, earnings, filing_item, comparison and pit_trap queries;
relevance graded 1-2 by reading the passages, see docs/retrieval.md). Its lake is built the first
time (universe, news_raw, filings_raw and evidence only, from configs/real_sample.toml with the
calendar extended to the end of 2024 so the 2024 Apple filings and the Jan-Feb 2024 AAPL news come
in). It reports graded nDCG@10 (gain 2^grade - 1), binary Recall@20, point-in-time trap violations
(a passage published after the as-of date that the query is about, returned in the top 20) and the
warm p50/p95 latency of ``SearchEngine.search`` per mode beside a plain rank_bm25 + numpy cosine
baseline timed in the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_dagster.core.tables import Lake  # noqa: E402
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


def build_queries(
    ev: pl.DataFrame,
    truth_docs: pl.DataFrame | None,
    events: pl.DataFrame | None,
    universe: pl.DataFrame,
    as_of: dt.date,
    per_kind: int,
    rng: np.random.Generator,
) -> list[dict]:
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
        rel = low.filter(
            (pl.col("ticker") == r["ticker"]) & (pl.col("fiscal_period") == r["fiscal_period"]) & pl.col("low").str.contains(METRIC_PHRASES[m])
        )
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
            qs.append(
                {
                    "kind": "compare",
                    "query": f"Compare {m}s across {', '.join(ts[:4])} and {ts[4]} in {r['fiscal_period']}",
                    "rel": set(rel["passage_id"]),
                }
            )
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
    ap.add_argument("--lake", default=None, help="lake folder (default: data_lake; with --real: .benchmarks/real_lake)")
    ap.add_argument("--per-kind", type=int, default=25)
    ap.add_argument("--as-of", nargs="*", default=["2019-06-28", "2019-12-31"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real", action="store_true", help="the hand-judged query set on the real development sample")
    ap.add_argument(
        "--sample", default=str(DEFAULT_SAMPLE), help="the real sample folder (with --real; default: $FINRAG_REAL_SAMPLE, else data/real)"
    )
    ap.add_argument("--queries", default=str(REAL_QUERIES), help="the real query set (with --real)")
    ap.add_argument("--per-query", action="store_true", help="with --real: also print each query's nDCG@10 per method")
    args = ap.parse_args()
    if args.real:
        return main_real(Path(args.lake or ".benchmarks/real_lake"), Path(args.sample), Path(args.queries), args.per_query)
    lake = Lake(args.lake or "data_lake")
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


# ---------------------------------------------------------------- the real development sample
ROOT = Path(__file__).resolve().parents[1]
REAL_QUERIES = ROOT / "benchmarks" / "data" / "real_queries.jsonl"
REAL_CONFIG = ROOT / "configs" / "real_sample.toml"
CONFIG_SAMPLE = ROOT / "data" / "real"  # where configs/real_sample.toml reads the sample (git-ignored, not shipped)
DEFAULT_SAMPLE = Path(os.environ.get("FINRAG_REAL_SAMPLE") or CONFIG_SAMPLE)
REAL_KINDS = ("news_event", "earnings", "filing_item", "comparison", "pit_trap")
# The sample's Apple filing text is from 2024 and its AAPL news runs to Feb 2024: the lake's
# calendar is extended past configs/real_sample.toml's end (2023-12-29) so they become evidence.
REAL_END = dt.date(2024, 12, 31)
REAL_ASSETS = ("universe", "news_raw", "filings_raw", "evidence")  # what `evidence` needs, nothing more
SAMPLE_FILES = ("universe/tickers.csv", "news/fnspid_news.parquet", "filings/filings_index.parquet", "filings/filings_text.parquet")
BASELINE_NAME = "plain baseline: rank_bm25.BM25Okapi + numpy cosine (MiniLM), equal-weight min-max"


def ndcg_graded(ranked: list[str], grades: dict[str, int], k: int = 10) -> float:
    """nDCG@k with gain 2^grade - 1 (grades 1-2), log2 discount."""
    dcg = sum((2 ** grades[p] - 1) / math.log2(i + 2) for i, p in enumerate(ranked[:k]) if p in grades)
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def load_real_queries(path: Path) -> list[dict]:
    qs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for q in qs:
        q["grades"] = {r["passage_id"]: int(r["grade"]) for r in q.get("relevant", [])}
        q["future"] = set(q.get("future_ids", []))
    return qs


def real_settings(lake_dir: Path, sample: Path):
    """configs/real_sample.toml with its sample paths moved to ``sample``, the lake at ``lake_dir``
    and the calendar run to the end of 2024."""
    from finrag_dagster.core.settings import load_settings

    s = load_settings(REAL_CONFIG)
    default = CONFIG_SAMPLE.resolve()

    def move(p: str) -> str:
        try:
            return str(sample.resolve() / Path(p).resolve().relative_to(default))
        except ValueError:
            return p

    src = s.sources
    sources = {
        "universe": move(src.universe),
        "news": [move(p) for p in src.news],
        "prices": [move(p) for p in src.prices],
        "filings_index": [move(p) for p in src.filings_index],
        "filings_text": [move(p) for p in src.filings_text],
    }
    return s.with_overrides(lake_dir=str(lake_dir.resolve()), sources=sources, calendar={"end": REAL_END})


def ensure_real_lake(lake_dir: Path, sample: Path) -> tuple[Lake, float | None]:
    """The lake at ``lake_dir``; built (only what `evidence` needs) when it has no evidence yet."""
    lake = Lake(lake_dir)
    if lake.materialized_dates("evidence"):
        return lake, None
    missing = [f for f in SAMPLE_FILES if not (sample / f).exists()]
    if missing:
        raise SystemExit(
            f"the real development sample is not at {sample} (missing {', '.join(missing)}): "
            "pass --sample <folder> or set FINRAG_REAL_SAMPLE (the folder with PROVENANCE.md, news/, filings/, universe/)"
        )
    from finrag_dagster.cli import lake_lock
    from finrag_dagster.pipeline import RunOptions, run_range

    s = real_settings(lake_dir, sample)
    print(f"building the real-sample lake in {lake.root} ({', '.join(REAL_ASSETS)}, {s.calendar.start} .. {s.calendar.end}) ...", flush=True)
    t0 = time.perf_counter()
    with lake_lock(s.lake_dir):
        run_range(s, only=list(REAL_ASSETS), options=RunOptions(log_level="ERROR"))
    took = time.perf_counter() - t0
    print(f"built in {took:.0f} s", flush=True)
    return Lake(lake_dir), took


_WORD = re.compile(r"[a-z0-9]+")


class PlainBaseline:
    """rank_bm25 over the passages public before as-of plus a numpy cosine over their stored
    embeddings, fused by equal-weight min-max: the straightforward thing to compare against."""

    def __init__(self, evidence: pl.DataFrame, as_of_ns: int):
        from rank_bm25 import BM25Okapi

        ev = evidence.filter(pl.col("public_time").dt.epoch("ns") < as_of_ns)
        self.pid = ev["passage_id"].to_list()
        self.bm25 = BM25Okapi([_WORD.findall((t or "").lower()) for t in ev["text"].to_list()])
        self.emb = np.asarray(ev["embedding"].to_list(), dtype=np.float32)

    def search(self, text: str, k: int = 20) -> list[str]:
        from finrag_dagster.core.embeddings import embed
        from finrag_dagster.core.retrieval.pool import minmax

        q = embed([text])[0]
        b = np.asarray(self.bm25.get_scores(_WORD.findall(text.lower())), dtype=np.float64)
        d = (self.emb @ q).astype(np.float64)
        h = (minmax(b) + minmax(d)) / 2
        top = np.argsort(-h, kind="stable")[:k]
        return [self.pid[i] for i in top]


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, q)) if xs else float("nan")


REAL_METHODS = (*MODES, "baseline")
REAL_NAMES = {**MODE_NAMES, "baseline": "plain baseline (rank_bm25 + cosine)"}


@dataclass
class RealScores:
    """What the real query set's run collects, per method (and per kind for the scores)."""

    scores: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    violations: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    late_hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lat: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rows: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


def warn_absent(queries: list[dict], ev: pl.DataFrame, lake: Lake) -> None:
    """Warn when judged passage ids are not in the lake (they count as not retrieved)."""
    known = set(ev["passage_id"].to_list())
    judged = {p for q in queries for p in (*q["grades"], *q["future"])}
    absent = judged - known
    if absent:
        print(
            f"WARNING: {len(absent)} of {len(judged)} judged passage ids are not in {lake.root} "
            "(a lake built from another sample or calendar?); they count as not retrieved",
            flush=True,
        )


def run_real_day(lake: Lake, ev: pl.DataFrame, day: str, group: list[dict], out: RealScores) -> None:
    """One as-of date's queries through every mode and the plain baseline, timed warm, into ``out``."""
    from finrag_dagster.core.retrieval.engine import _as_of_ns

    cfg = SearchConfig(k=20)
    engine = SearchEngine(lake, day, evidence=ev)
    base = PlainBaseline(ev, engine.as_of_ns)
    pub = dict(zip(engine.index.df["passage_id"].to_list(), engine.index.df["public_time"].dt.epoch("ns").to_list()))
    # warm-up: the first query of each engine once per method, untimed (encoder, DuckDB view, numba)
    for mode in MODES:
        engine.search(group[0]["query"], mode=mode, cfg=cfg)
    base.search(group[0]["query"])
    for q in group:
        row: dict[str, str] = {}
        out.rows.append((q["id"], q["kind"], row))
        for m in REAL_METHODS:
            t0 = time.perf_counter()
            if m == "baseline":
                ranked = base.search(q["query"], k=20)
            else:
                ranked = [h.passage_id for h in engine.search(q["query"], mode=m, cfg=cfg).hits]
            out.lat[m].append(time.perf_counter() - t0)
            out.late_hits[m] += sum(1 for p in ranked if pub.get(p, engine.as_of_ns) >= _as_of_ns(day))
            if q["kind"] == "pit_trap":
                out.violations[m] += len(set(ranked[:20]) & q["future"])
                row[m] = str(len(set(ranked[:20]) & q["future"]))
                continue
            rel = set(q["grades"])
            s = (ndcg_graded(ranked, q["grades"]), recall_at(ranked, rel))
            row[m] = f"{s[0]:.2f}"
            out.scores[(m, q["kind"])].append(s)
            out.scores[(m, "all")].append(s)


def print_real_quality(
    queries: list[dict], queries_path: Path, n_days: int, lake: Lake, ev: pl.DataFrame, built: float | None, out: RealScores
) -> None:
    """The quality table: nDCG@10 / Recall@20 per method and kind, and the pit_trap violations."""
    kinds = [k for k in REAL_KINDS if k != "pit_trap"]
    n_kind = {k: sum(1 for q in queries if q["kind"] == k) for k in REAL_KINDS}
    n_scored = sum(n_kind[k] for k in kinds)
    print(
        f"\nReal-data query set {queries_path.name}: {len(queries)} queries ("
        + ", ".join(f"{k} {n_kind[k]}" for k in REAL_KINDS)
        + f") over {n_days} as-of dates; "
        f"lake {lake.root} ({ev.height} passages{'' if built is None else f', built in {built:.0f} s'})"
    )
    print("nDCG@10 (graded, gain 2^g-1) / Recall@20 (grade >= 1); pit_trap: future passages returned in the top 20\n")
    print(
        "| method | "
        + " | ".join(f"{k} (n={n_kind[k]})" for k in kinds)
        + f" | all scored (n={n_scored}) | pit_trap violations (n={n_kind['pit_trap']}) |"
    )
    print("|---|" + "---|" * (len(kinds) + 2))
    for m in REAL_METHODS:
        cells = []
        for k in [*kinds, "all"]:
            v = out.scores[(m, k)]
            cells.append(f"{np.mean([x[0] for x in v]):.3f} / {np.mean([x[1] for x in v]):.3f}" if v else "–")
        print(f"| {REAL_NAMES[m]} | " + " | ".join(cells) + f" | {out.violations[m]} |")


def print_real_per_query(out: RealScores) -> None:
    """``--per-query``: each query's nDCG@10 per method (pit_trap: its violations)."""
    print("\nPer query: nDCG@10 (pit_trap: violations)\n")
    print("| query | kind | " + " | ".join(REAL_NAMES[m] for m in REAL_METHODS) + " |")
    print("|---|---|" + "---|" * len(REAL_METHODS))
    for qid, kind, row in sorted(out.rows, key=lambda r: (REAL_KINDS.index(r[1]), r[0])):
        print(f"| {qid} | {kind} | " + " | ".join(row[m] for m in REAL_METHODS) + " |")


def print_real_latency(out: RealScores) -> None:
    """The late hits, and the warm p50/p95 latency per method beside the plain baseline."""
    print(f"\nhits published at or after their query's as-of date, all queries and modes: {sum(out.late_hits.values())}")
    print(f"\nLatency per query, warm (each engine answers its first query once, untimed, before timing); {BASELINE_NAME}:\n")
    print("| method | p50 ms | p95 ms | queries |")
    print("|---|---|---|---|")
    for m in REAL_METHODS:
        label = f"`SearchEngine.search` {REAL_NAMES[m]}" if m != "baseline" else REAL_NAMES[m]
        print(f"| {label} | {_pct(out.lat[m], 50):.1f} | {_pct(out.lat[m], 95):.1f} | {len(out.lat[m])} |")


def main_real(lake_dir: Path, sample: Path, queries_path: Path, per_query: bool = False) -> None:
    """``--real``: the hand-judged query set on the real sample's lake (built the first time), every table."""
    t_start = time.perf_counter()
    queries = load_real_queries(queries_path)
    lake, built = ensure_real_lake(lake_dir, sample)
    ev = lake.read("evidence")
    warn_absent(queries, ev, lake)
    by_day: dict[str, list[dict]] = defaultdict(list)
    for q in queries:
        by_day[q["as_of"]].append(q)
    out = RealScores()
    for day in sorted(by_day):
        run_real_day(lake, ev, day, by_day[day], out)
    print_real_quality(queries, queries_path, len(by_day), lake, ev, built, out)
    if per_query:
        print_real_per_query(out)
    print_real_latency(out)
    print(
        f"\nbenchmark wall time {time.perf_counter() - t_start:.0f} s"
        + ("" if built is None else f" (of which the lake build {built:.0f} s)")
        + ". The synthetic set is the default run (without --real)."
    )


if __name__ == "__main__":
    main()
