"""Query retrieval (seed 001): parsing, as-of, period match, diversity, numeric density, budget."""

import datetime as dt
import re

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.retrieval.query import parse_query
from finrag_dagster.core.retrieval.search import (
    SearchConfig,
    SearchIndex,
    assemble_context,
    estimate_tokens,
    numeric_density,
    run_search,
    structured_sql,
)
from finrag_dagster.core.tables import Lake

ALIASES = {
    "NVDA": ["nvidia corporation", "nvidia"],
    "AAPL": ["apple inc.", "apple"],
    "MSFT": ["microsoft"],
    "GOOGL": ["alphabet", "google"],
    "AMZN": ["amazon"],
    "META": ["meta platforms", "meta"],
    "INTC": ["intel"],
}
AS_OF = dt.date(2024, 12, 31)


def test_parses_the_seed_001_queries():
    q = parse_query("NVDA gross margin Q3 2024", ALIASES, AS_OF)
    assert (q.tickers, q.metrics, q.periods, q.is_quantitative) == (["NVDA"], ["gross margin"], ["Q3 2024"], True)
    q = parse_query("Compare operating margins across AAPL, MSFT, GOOGL, AMZN and META", ALIASES, AS_OF)
    assert q.tickers == ["AAPL", "MSFT", "GOOGL", "AMZN", "META"] and q.is_comparison and q.query_type == "comparison"
    q = parse_query("Which company has the highest operating margin?", ALIASES, AS_OF)
    assert q.tickers == [] and q.is_comparison and q.is_quantitative
    q = parse_query("What did Intel say about guidance?", ALIASES, AS_OF)
    assert q.tickers == ["INTC"] and q.metrics == ["guidance"] and q.query_type == "statement"
    q = parse_query("risks in Apple's latest 10-K", ALIASES, AS_OF)
    assert q.tickers == ["AAPL"] and q.form_types == ["10-K"] and q.latest and q.query_type == "risk"
    assert parse_query("revenue last quarter", ALIASES, dt.date(2024, 5, 10)).periods == ["Q1 2024"]
    assert parse_query("third quarter of fiscal 2021 and FY2023", ALIASES, AS_OF).periods == ["Q3 2021", "FY2023"]
    q = parse_query("news between 2021-01-01 and 2021-03-31", ALIASES, AS_OF)
    assert (q.date_from, q.date_to) == (dt.date(2021, 1, 1), dt.date(2021, 3, 31))


def _evidence(rows):
    """rows: (pid, ticker, family, day, fiscal_period, text)"""
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(len(rows), 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return pl.DataFrame(
        {
            "passage_id": [r[0] for r in rows],
            "ticker": [r[1] for r in rows],
            "source_family": [r[2] for r in rows],
            "public_time": [dt.datetime.combine(dt.date.fromisoformat(r[3]), dt.time(15), tzinfo=dt.timezone.utc) for r in rows],
            "form_type": ["10-Q" if r[2] == "sec_filing" else None for r in rows],
            "item": [None] * len(rows),
            "fiscal_period": [r[4] for r in rows],
            "title": [r[0] for r in rows],
            "text": [r[5] for r in rows],
            "url": [f"u{r[0]}" for r in rows],
            "embedding": pl.Series(emb, dtype=pl.Array(pl.Float32, 384)),
        },
        schema_overrides={"public_time": pl.Datetime("us", "UTC"), "form_type": pl.Utf8, "item": pl.Utf8, "fiscal_period": pl.Utf8},
    )


def _ns(day: str) -> int:
    return int(dt.datetime.combine(dt.date.fromisoformat(day), dt.time(23), tzinfo=dt.timezone.utc).timestamp() * 1e9)


def test_as_of_hides_later_documents():
    ev = _evidence([("old", "NVDA", "news", "2021-01-04", None, "nvidia margin"), ("new", "NVDA", "news", "2021-02-01", None, "nvidia margin")])
    idx = SearchIndex(ev, _ns("2021-01-20"))
    assert idx.pid == ["old"]
    q = parse_query("NVDA margin", ALIASES, dt.date(2021, 1, 20))
    for mode in ("bm25", "dense", "hybrid", "full"):
        res = run_search(idx, q, np.ones(384, dtype=np.float32) / np.sqrt(384), ["new", "old"], SearchConfig(k=5), mode)
        assert [h.passage_id for h in res.hits] == ["old"]


def test_exact_fiscal_period_is_boosted():
    ev = _evidence(
        [
            ("q2", "NVDA", "sec_filing", "2021-08-20", "Q2 2021", "NVIDIA gross margin was 64.1% for the quarter"),
            ("q3", "NVDA", "sec_filing", "2021-11-20", "Q3 2021", "NVIDIA gross margin was 65.2% for the quarter"),
        ]
    )
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q = parse_query("NVDA gross margin Q2 2021", ALIASES, dt.date(2021, 12, 31))
    res = run_search(idx, q, np.asarray(ev["embedding"][1].to_numpy()), ["q3", "q2"], SearchConfig(k=2, second_stage=0), "full")
    assert res.hits[0].passage_id == "q2" and res.hits[0].components["period_match"] == 1.0
    assert "recency" not in res.hits[0].components  # a period was asked: no recency decay


def test_comparison_shows_three_companies_in_top_five():
    rows = [(f"n{i}", "NVDA", "sec_filing", "2021-11-20", "Q3 2021", f"NVIDIA operating margin {40 + i}.0% operating margin") for i in range(8)]
    rows += [
        ("a1", "AAPL", "sec_filing", "2021-11-01", "Q3 2021", "Apple results"),
        ("m1", "MSFT", "sec_filing", "2021-11-01", "Q3 2021", "Microsoft results"),
    ]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q = parse_query("Compare operating margins across NVDA, AAPL and MSFT", ALIASES, dt.date(2021, 12, 31))
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    res = run_search(idx, q, q_emb, [f"n{i}" for i in range(8)], SearchConfig(k=10), "full")
    assert len({h.ticker for h in res.hits[:5]}) >= 3
    assert res.hits[0].ticker == "NVDA"  # the best match stays first
    plain = run_search(
        idx, parse_query("NVDA operating margin", ALIASES, dt.date(2021, 12, 31)), q_emb, [f"n{i}" for i in range(8)], SearchConfig(k=10), "full"
    )
    assert {h.ticker for h in plain.hits[:5]} == {"NVDA"}  # no diversity for a single-company query


def test_a_comparison_keeps_every_named_company_in_its_top_five_and_groups_the_context():
    rows = [(f"n{i}", "NVDA", "sec_filing", "2021-11-20", "Q3 2021", f"NVIDIA revenue growth {40 + i}% revenue growth") for i in range(6)]
    rows += [(f"i{i}", "INTC", "sec_filing", "2021-11-19", "Q3 2021", f"Intel revenue growth {10 + i}% revenue growth") for i in range(4)]
    rows += [("a1", "AAPL", "news", "2021-06-01", None, "Apple store opening"), ("m1", "MSFT", "news", "2021-05-01", None, "Microsoft event")]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q = parse_query("Compare revenue growth of NVIDIA, Apple and Microsoft", ALIASES, dt.date(2021, 12, 31))
    assert q.company_tickers == [["NVDA"], ["AAPL"], ["MSFT"]]
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    structured = [f"n{i}" for i in range(6)] + [f"i{i}" for i in range(4)]
    res = run_search(idx, q, q_emb, structured, SearchConfig(k=10), "full")
    top = [h.ticker for h in res.hits[:5]]
    assert {"NVDA", "AAPL", "MSFT"} <= set(top), top  # each named company, though their passages score low
    assert res.hits[0].ticker == "NVDA" and "INTC" not in top  # an unnamed company gives way first
    heads = [ln for ln in res.context.splitlines() if ln.startswith("## ")]
    assert heads == ["## NVDA", "## AAPL", "## MSFT", "## other companies"]
    assert [c["n"] for c in res.citations] == list(range(1, len(res.citations) + 1))
    # without the rule the named companies would not all be there
    cfg_off = SearchConfig(k=10, diversity_window=0)
    off = run_search(idx, q, q_emb, structured, cfg_off, "full")
    assert not {"AAPL", "MSFT"} <= {h.ticker for h in off.hits[:5]}


def test_numeric_density_and_context_budget():
    assert numeric_density("Revenue $4.2B, margin 64.1%, capex $1,250 and $3.1M, growth 12%") == 5
    from finrag_dagster.core.retrieval.search import Hit

    hits = [Hit(f"p{i}", "NVDA", "news", None, None, None, "2021-01-01T00:00:00", f"title {i}", "x " * 400, "u", 1.0) for i in range(10)]
    ctx, cites, used = assemble_context(hits, budget=800)
    assert used <= 800 and 1 <= len(cites) < 10 and ctx.startswith("[1]")
    assert estimate_tokens("abcd" * 10) == 10


def test_structured_sql_runs_on_duckdb_over_the_lake(tmp_path):
    lake = Lake(tmp_path)
    ev = _evidence(
        [
            ("a", "NVDA", "sec_filing", "2021-11-20", "Q3 2021", "gross margin 65%"),
            ("b", "AAPL", "sec_filing", "2021-11-20", "Q3 2021", "gross margin 40%"),
            ("c", "NVDA", "sec_filing", "2022-02-20", "Q4 2021", "gross margin 66%"),
        ]
    )
    from finrag_dagster.core.text import title_key

    full = ev.with_columns(
        pl.lit("second").alias("time_precision"),
        pl.col("passage_id").alias("doc_id"),
        pl.lit("IT").alias("sector"),
        pl.col("title").map_elements(title_key, return_dtype=pl.Utf8).alias("title_key"),
        pl.col("passage_id").alias("dup_cluster"),
    )
    lake.write("evidence", full, date="2022-03-01")
    q = parse_query("NVDA gross margin Q3 2021", ALIASES, dt.date(2022, 3, 1))
    sql, params = structured_sql(q, 10)
    con = lake.duckdb(tables=["evidence"])
    got = [r[0] for r in con.execute(sql, {**params, "as_of": dt.datetime(2022, 3, 1, tzinfo=dt.timezone.utc)}).fetchall()]
    assert got == ["a"]
    assert structured_sql(parse_query("hello world", ALIASES, AS_OF), 10) is None


def test_periods_written_the_ways_analysts_write_them():
    assert parse_query("Intel fourth-quarter 2020 earnings", ALIASES, AS_OF).periods == ["Q4 2020"]
    assert parse_query("fiscal first-quarter 2024 outlook", ALIASES, AS_OF).periods == ["Q1 2024"]
    q = parse_query("NVDA news in July 2021", ALIASES, AS_OF)
    assert (q.date_from, q.date_to) == (dt.date(2021, 7, 1), dt.date(2021, 7, 31))
    assert parse_query("Intel's Q4 results", ALIASES, AS_OF).quarters_without_year == [4]
    assert not parse_query("Compare the activist campaigns at Intel and Apple", ALIASES, AS_OF).is_quantitative


def test_a_company_only_query_ranks_the_company_s_passages_by_keyword_not_age():
    rows = [("old", "NVDA", "news", "2021-01-04", None, "nvidia antitrust lawsuit filed by regulators")]
    rows += [(f"new{i}", "NVDA", "news", f"2021-06-{i + 10:02d}", None, f"nvidia product launch {i}") for i in range(5)]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q = parse_query("NVIDIA antitrust lawsuit", ALIASES, dt.date(2021, 12, 31))
    newest_first = [f"new{i}" for i in reversed(range(5))] + ["old"]  # what the SQL returns for the company
    from finrag_dagster.core.retrieval.search import company_only, structured_list

    assert company_only(q)
    kw_rows, _ = idx.keyword(q.text)
    assert structured_list(idx, q, newest_first, kw_rows, 10)[0] == "old"
    dated = parse_query("NVIDIA antitrust lawsuit in 2021", ALIASES, dt.date(2021, 12, 31))
    assert not company_only(dated) and structured_list(idx, dated, newest_first, kw_rows, 10)[0] == "new4"


def test_a_named_filing_section_maps_to_its_item_on_each_form():
    from finrag_dagster.core.retrieval.search import section_items

    q = parse_query("Apple 10-Q MD&A: net sales by category", ALIASES, AS_OF)
    assert q.sections == ["md&a"] and section_items(q) == [("10-Q", "Item 2")]
    q = parse_query("Apple management's discussion of results", ALIASES, AS_OF)
    assert section_items(q) == [("10-K", "Item 7"), ("10-Q", "Item 2")]
    q = parse_query("Apple legal proceedings: the DOJ antitrust lawsuit", ALIASES, AS_OF)
    assert q.sections == ["legal proceedings"] and section_items(q) == [("10-K", "Item 3"), ("10-Q", "Part II Item 1")]
    q = parse_query("risks in Apple's latest 10-K", ALIASES, AS_OF)  # risks + a form: its risk factors
    assert section_items(q) == [("10-K", "Item 1A")]
    assert parse_query("Apple quantitative and qualitative disclosures about market risk", ALIASES, AS_OF).sections == ["market risk"]
    assert parse_query("What did Intel say about guidance?", ALIASES, AS_OF).sections == []
    built = structured_sql(parse_query("Apple 10-K risk factors", ALIASES, AS_OF), 10)
    assert built is not None and "item = $si0" in built[0] and built[1]["si0"] == "Item 1A"


def test_the_named_section_is_boosted_over_other_items_of_the_same_filing():
    ev = _evidence(
        [
            ("mdna", "AAPL", "sec_filing", "2024-08-02", "Q3 2024", "Apple net sales by category and segment"),
            ("fs", "AAPL", "sec_filing", "2024-08-02", "Q3 2024", "Apple net sales by category and segment"),
        ]
    ).with_columns(item=pl.Series(["Item 2", "Item 1"]))
    idx = SearchIndex(ev, _ns("2024-08-15"))
    q = parse_query("Apple 10-Q MD&A net sales by category", ALIASES, dt.date(2024, 8, 15))
    q_emb = np.asarray(ev["embedding"][1].to_numpy())  # the embedding favours the financial statements
    res = run_search(idx, q, q_emb, ["fs", "mdna"], SearchConfig(k=2, second_stage=0), "full")
    assert res.hits[0].passage_id == "mdna" and res.hits[0].components["section_match"] == 1.0
    assert "section_match" not in res.hits[1].components


def test_a_query_that_names_a_past_time_is_not_aged_by_recency():
    assert parse_query("Intel layoffs in 2022", ALIASES, AS_OF).named_until == dt.date(2022, 12, 31)
    assert parse_query("Intel news in July 2021", ALIASES, AS_OF).named_until == dt.date(2021, 7, 31)
    assert parse_query("Intel to acquire Tower Semiconductor for $5.4 billion", ALIASES, AS_OF).named_until is None
    ev = _evidence(
        [
            ("old", "INTC", "news", "2022-02-15", None, "Intel to acquire Tower Semiconductor"),
            ("new", "INTC", "news", "2022-12-20", None, "Intel to acquire Tower Semiconductor"),
        ]
    )
    idx = SearchIndex(ev, _ns("2022-12-31"))
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    undated = run_search(
        idx, parse_query("Intel to acquire Tower Semiconductor", ALIASES, dt.date(2022, 12, 31)), q_emb, [], SearchConfig(k=2), "full"
    )
    assert "recency" in undated.hits[0].components
    dated = run_search(
        idx,
        parse_query("Intel to acquire Tower Semiconductor in February 2022", ALIASES, dt.date(2022, 12, 31)),
        q_emb,
        [],
        SearchConfig(k=2),
        "full",
    )
    assert all("recency" not in h.components for h in dated.hits)
    # a time that ends within the recency window (this year, asked in December) is still aged
    this_year = run_search(
        idx, parse_query("Intel to acquire Tower Semiconductor in 2022", ALIASES, dt.date(2022, 12, 31)), q_emb, [], SearchConfig(k=2), "full"
    )
    assert "recency" in this_year.hits[0].components


def test_the_index_shortcuts_give_the_full_sort_order():
    """keyword() sorts only the passages with a query term, semantic(top=) partitions before sorting:
    both must give exactly the order of a full sort (ties: the later row first)."""
    rng = np.random.default_rng(3)
    words = ["margin", "revenue", "apple", "guidance", "chip", "fab", "loss"]
    rows = [(f"p{i}", "AAPL", "news", "2021-01-04", None, " ".join(rng.choice(words, size=4))) for i in range(300)]
    ev = _evidence(rows)
    emb = np.asarray(ev["embedding"].to_list(), dtype=np.float32)
    emb[100:120] = emb[5]  # ties across the cut
    ev = ev.with_columns(pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384)))
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q_emb = emb[5]
    full, full_s = idx.semantic(q_emb)
    s = idx.emb @ q_emb
    assert full.tolist() == np.lexsort((-np.arange(len(s)), -s)).tolist()
    for top in (1, 7, 15, 60, 299, 300, 500):
        r, sc = idx.semantic(q_emb, top)
        assert r.tolist() == full[:top].tolist() and sc.tolist() == full_s[:top].tolist()
    assert len(idx.semantic(q_emb, 0)[0]) == 0
    rows_kw, s_kw = idx.keyword("apple chip")
    W = idx._W
    from finrag_dagster.core.retrieval.lexical import bm25_tokens, query_matrix

    qt = idx.tm.vocab.lookup(bm25_tokens("apple chip"))
    ref = np.asarray((W @ query_matrix([qt], W.shape[1], idx.stats.idf()).T).todense()).ravel()
    hit = np.asarray(W[:, sorted(set(qt))].getnnz(axis=1)).ravel() > 0
    order = np.lexsort((-np.arange(len(ref)), -ref))
    assert rows_kw.tolist() == order[hit[order]].tolist() and s_kw.tolist() == ref[order[hit[order]]].tolist()


def test_an_earnings_query_is_about_the_results_release_after_its_period():
    from finrag_dagster.core.retrieval.engine import apply_releases

    def t(day, hour=21):
        return dt.datetime.combine(dt.date.fromisoformat(day), dt.time(hour), tzinfo=dt.timezone.utc)

    filings = pl.DataFrame(
        {
            "ticker": ["INTC"] * 4 + ["AAPL"],
            "form_type": ["8-K", "8-K", "8-K", "10-Q", "8-K"],
            "public_time": [t("2021-04-22"), t("2021-06-01"), t("2021-07-22"), t("2021-07-30"), t("2021-07-27")],
            "items": ["2.02,9.01", "5.02", "2.02,9.01", None, "2.02,9.01"],
        }
    )
    as_of = dt.date(2021, 8, 31)
    assert parse_query("Intel second-quarter 2021 results", ALIASES, as_of).is_earnings
    assert not parse_query("Intel names a new CEO", ALIASES, as_of).is_earnings
    q = parse_query("Intel second-quarter 2021 results", ALIASES, as_of)
    q.period_windows = [(["INTC"], dt.date(2021, 3, 28), dt.date(2021, 6, 26) + dt.timedelta(days=60))]
    apply_releases(q, filings, _ns("2021-08-31"))
    assert q.release_days == [(["INTC"], dt.date(2021, 7, 22), "8-K")]  # not the Q1 release, nor the 5.02 8-K
    assert q.notes[-1].startswith("INTC: results release read as 2021-07-22 (its 8-K Item 2.02)")  # the user is told
    # the period's news window now starts at its release (before it, the news is about Q1's results)
    assert q.period_windows == [(["INTC"], dt.date(2021, 7, 22), dt.date(2021, 6, 26) + dt.timedelta(days=60))]
    q = parse_query("Intel results", ALIASES, dt.date(2021, 7, 25))
    apply_releases(q, filings, _ns("2021-07-25"))
    assert q.release_days == [(["INTC"], dt.date(2021, 7, 22), "8-K")]  # no period: the latest release before as-of
    q = parse_query("Intel results", ALIASES, dt.date(2021, 7, 21))
    apply_releases(q, filings, _ns("2021-07-21"))
    assert q.release_days == [(["INTC"], dt.date(2021, 4, 22), "8-K")]  # the July release is not public yet
    # the second quarter asked before its results are public: its window runs past as-of, but the
    # July release must not be chosen, nor move the window
    q = parse_query("Intel second-quarter 2021 results", ALIASES, dt.date(2021, 7, 21))
    q.period_windows = [(["INTC"], dt.date(2021, 3, 28), dt.date(2021, 6, 26) + dt.timedelta(days=60))]
    apply_releases(q, filings, _ns("2021-07-21"))
    assert q.release_days == []
    assert q.period_windows == [(["INTC"], dt.date(2021, 3, 28), dt.date(2021, 6, 26) + dt.timedelta(days=60))]
    # a company without 8-Ks: the day its results news peaks stands for the release
    news = _evidence(
        [("d1", "DLTR", "news", "2021-08-26", None, "Dollar Tree second-quarter results beat, cuts outlook")] * 1
        + [(f"d{i}", "DLTR", "news", "2021-08-26", None, "Dollar Tree earnings call") for i in range(2, 5)]
        + [(f"e{i}", "DLTR", "news", "2021-08-10", None, "Dollar Tree earnings preview") for i in range(2)]
        + [(f"f{i}", "DLTR", "news", "2021-08-27", None, "Dollar Tree price point") for i in range(6)]
    )
    q = parse_query("Dollar Tree results", {"DLTR": ["dollar tree"]}, dt.date(2021, 9, 3))
    apply_releases(q, filings, _ns("2021-09-03"), news)
    assert q.release_days == [(["DLTR"], dt.date(2021, 8, 26), "news")]


def test_the_results_release_and_the_day_after_are_boosted():
    rows = [
        ("before", "INTC", "news", "2021-07-15", None, "Intel second-quarter results preview: revenue forecast"),
        ("release", "INTC", "news", "2021-07-22", None, "Intel second-quarter results beat, raises revenue forecast"),
        ("after", "INTC", "news", "2021-07-23", None, "Intel raises revenue forecast after second-quarter results"),
        ("later", "INTC", "news", "2021-07-29", None, "Intel second-quarter results: revenue forecast raised"),
    ]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-07-31"))
    q = parse_query("Did Intel raise its revenue forecast?", ALIASES, dt.date(2021, 7, 31))
    q_emb = np.asarray(ev["embedding"][3].to_numpy())
    off = run_search(idx, q, q_emb, [], SearchConfig(k=4, release_days=0), "full")
    assert {h.passage_id for h in off.hits[:2]} != {"release", "after"}
    q.release_days = [(["INTC"], dt.date(2021, 7, 22), "8-K")]
    on = run_search(idx, q, q_emb, [], SearchConfig(k=4, release_days=1, second_stage=0), "full")
    assert {h.passage_id for h in on.hits[:2]} == {"release", "after"}
    assert all(("release" in h.components) == (h.passage_id in ("release", "after")) for h in on.hits)


def test_a_comparison_s_semantic_list_lets_the_named_companies_take_turns():
    from finrag_dagster.core.retrieval.search import take_turns

    assert take_turns([0, 1, 2, 3, 4, 5], ["A", "A", "X", "A", "B", "B"], [["A"], ["B"]], 5) == [0, 4, 1, 5, 3]
    rows = [(f"n{i}", "NVDA", "news", "2021-11-20", None, f"gpu item {i}") for i in range(30)]
    rows += [(f"i{i}", "INTC", "news", "2021-11-19", None, f"chipmaker item {i}") for i in range(3)]
    ev = _evidence(rows)
    emb = ev["embedding"].to_numpy()
    q_emb = emb[:30].mean(axis=0)
    q_emb /= np.linalg.norm(q_emb)
    idx = SearchIndex(ev, _ns("2021-12-31"))
    q = parse_query("Compare NVIDIA and Intel supply chains", ALIASES, dt.date(2021, 12, 31))
    full = idx.semantic(q_emb)[0]
    some = np.asarray([31, 2, 30, 5, 32, 0])
    assert idx.semantic(q_emb, among=some)[0].tolist() == [r for r in full.tolist() if r in set(some.tolist())]  # the full order, restricted
    off = run_search(idx, q, q_emb, [], SearchConfig(k=20, list_depth=10, company_lists=0), "full")
    on = run_search(idx, q, q_emb, [], SearchConfig(k=20, list_depth=10, company_lists=1), "full")
    assert sum(h.ticker == "INTC" for h in off.hits) == 0
    assert sum(h.ticker == "INTC" for h in on.hits) == 3


def test_a_metric_named_in_the_plural_is_still_the_metric():
    assert parse_query("When did Intel and Apple raise their outlooks?", ALIASES, AS_OF).metrics == ["guidance"]
    assert parse_query("Compare share buybacks at Intel and Apple", ALIASES, AS_OF).metrics == ["buyback"]
    assert parse_query("Intel forecasts", ALIASES, AS_OF).metrics == ["guidance"]


def _titled(rows, titles):
    return _evidence(rows).with_columns(pl.Series("title", titles))


def test_a_headline_that_says_the_change_asked_about_is_boosted_and_listed():
    from finrag_dagster.core.retrieval.search import change_direction, says_change

    assert change_direction("When did Intel raise its outlooks?") == ["up"]
    assert change_direction("Compare the 2022 forecast cuts at Intel and Apple") == ["down"]
    assert change_direction("Intel revenue in 2022") == []
    rows = [(f"f{i}", "INTC", "news", "2021-07-10", None, f"Intel revenue forecast preview number {i}") for i in range(12)]
    rows += [
        ("raised", "INTC", "news", "2021-07-23", None, "The chipmaker now expects more."),
        ("cut", "INTC", "news", "2021-07-24", None, "The chipmaker now expects less."),
        ("late", "INTC", "news", "2021-08-05", None, "The chipmaker now expects even more."),  # after as-of
    ]
    titles = [r[5] for r in rows[:12]] + ["Intel raises annual revenue forecast", "Intel cuts revenue forecast", "Intel lifts forecast again"]
    ev = _titled(rows, titles)
    idx = SearchIndex(ev, _ns("2021-07-31"))
    assert "late" not in idx.pid  # published after as-of: never read, so never listed
    q = parse_query("When did Intel raise its revenue forecast?", ALIASES, dt.date(2021, 7, 31))
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    assert says_change("Intel raises annual revenue forecast", ["up"], [re.compile(r"\bforecast\b", re.I)])
    assert not says_change("Intel cuts revenue forecast", ["up"], [re.compile(r"\bforecast\b", re.I)])
    # the change list brings in a headline that neither the keyword nor the semantic list reaches
    off = run_search(idx, q, q_emb, [], SearchConfig(k=20, list_depth=5, change_boost=1.0, change_list=False), "full")
    listed = run_search(idx, q, q_emb, [], SearchConfig(k=20, list_depth=5, change_boost=1.0, change_list=True), "full")
    assert "raised" not in [h.passage_id for h in off.hits]
    assert "raised" in [h.passage_id for h in listed.hits]
    # the boost lifts it to the top, and only it (the cut goes the other way)
    on = run_search(idx, q, q_emb, [], SearchConfig(k=20, second_stage=0), "full")
    assert on.hits[0].passage_id == "raised" and on.hits[0].components["change"] == 1.0
    assert all(("change" in h.components) == (h.passage_id == "raised") for h in on.hits)
    assert "late" not in [h.passage_id for h in on.hits]


def test_a_when_did_question_is_not_aged_by_recency():
    ev = _evidence([("a", "INTC", "news", "2021-03-01", None, "Intel raises forecast"), ("b", "INTC", "news", "2021-07-01", None, "Intel news")])
    idx = SearchIndex(ev, _ns("2021-07-31"))
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    asked = run_search(idx, parse_query("Did Intel raise its forecast?", ALIASES, dt.date(2021, 7, 31)), q_emb, [], SearchConfig(k=2), "full")
    assert all("recency" in h.components for h in asked.hits)
    when = parse_query("When did Intel raise its forecast?", ALIASES, dt.date(2021, 7, 31))
    res = run_search(idx, when, q_emb, [], SearchConfig(k=2), "full")
    assert all("recency" not in h.components for h in res.hits)
    res = run_search(idx, when, q_emb, [], SearchConfig(k=2, when_no_recency=False), "full")
    assert all("recency" in h.components for h in res.hits)


def test_the_release_days_passages_form_a_list_of_their_own():
    rows = [(f"f{i}", "INTC", "news", "2021-07-10", None, f"Intel second-quarter results preview {i}") for i in range(12)]
    rows += [
        ("day", "INTC", "news", "2021-07-22", None, "The chipmaker reported after the bell."),
        ("other", "NVDA", "news", "2021-07-22", None, "The chipmaker reported after the bell."),  # another company
        ("late", "INTC", "news", "2021-08-03", None, "The chipmaker reported after the bell."),  # after as-of
    ]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-07-31"))
    q = parse_query("Intel second-quarter 2021 results", ALIASES, dt.date(2021, 7, 31))
    q.release_days = [(["INTC"], dt.date(2021, 7, 22), "8-K"), (["INTC"], dt.date(2021, 8, 3), "8-K")]
    q_emb = np.asarray(ev["embedding"][0].to_numpy())
    off = run_search(idx, q, q_emb, [], SearchConfig(k=30, list_depth=3, release_list=False), "full")
    on = run_search(idx, q, q_emb, [], SearchConfig(k=30, list_depth=3, release_list=True), "full")
    assert "day" not in [h.passage_id for h in off.hits]
    assert "day" in [h.passage_id for h in on.hits] and on.hits[0].passage_id == "day"
    assert "late" not in idx.pid and "late" not in [h.passage_id for h in on.hits]  # public after as-of: never read


def test_the_top_is_reranked_once_more_by_the_cosine_of_title_and_text():
    # two passages tie on everything but their embedding: the one closer to the query goes first
    rows = [("far", "INTC", "news", "2021-07-20", None, "Intel foundry plan"), ("near", "INTC", "news", "2021-07-20", None, "Intel foundry plan")]
    ev = _evidence(rows)
    idx = SearchIndex(ev, _ns("2021-07-31"))
    q = parse_query("Intel foundry plan", ALIASES, dt.date(2021, 7, 31))
    assert not q.is_quantitative
    q_emb = np.asarray(ev["embedding"][1].to_numpy())  # the query's vector is "near"'s
    off = run_search(idx, q, q_emb, [], SearchConfig(k=2, second_stage=0), "full")
    on = run_search(idx, q, q_emb, [], SearchConfig(k=2, second_stage=30), "full")
    assert on.hits[0].passage_id == "near" and on.hits[0].components["second_stage"] == 1.0
    assert on.hits[1].components["second_stage"] == 0.0
    assert "second_stage" not in off.hits[0].components
    # only the top second_stage are touched: with 1, a single passage is left in its place
    one = run_search(idx, q, q_emb, [], SearchConfig(k=2, second_stage=1), "full")
    assert [h.passage_id for h in one.hits] == [h.passage_id for h in off.hits]
    # a quantitative query keeps the first stage's order
    qn = parse_query("Intel foundry plan revenue", ALIASES, dt.date(2021, 7, 31))
    assert qn.is_quantitative
    assert all("second_stage" not in h.components for h in run_search(idx, qn, q_emb, [], SearchConfig(k=2), "full").hits)


def test_an_as_of_outside_the_trading_calendar_reads_all_or_nothing_and_a_bad_one_is_named():
    """An --as-of past the calendar's last close sees every evidence partition (all of it is public
    before), one before its first day sees none: not an error that blames the settings' calendar."""
    from finrag_dagster.core.calendar import nyse
    from finrag_dagster.core.retrieval.engine import _as_of_ns, _last_evidence_day

    cal = nyse()
    assert _last_evidence_day(_as_of_ns("2031-01-01")) == cal.sessions[-1].item().isoformat()
    assert _last_evidence_day(_as_of_ns("1999-06-01")) == ""
    assert (
        _last_evidence_day(_as_of_ns("2019-06-28")) == "2019-07-01"
    )  # a date is the end of that New York day: after-close news decides on the next session
    assert _last_evidence_day(_as_of_ns("2019-06-28T15:59:00-04:00")) == "2019-06-28"  # before the close: that day's partition
    assert dt.date.fromisoformat(_last_evidence_day(_as_of_ns("2019-06-28T16:00:01-04:00"))) == dt.date(2019, 7, 1)
    with pytest.raises(ValueError, match="as-of 'yesterday-ish' is not a date or a time"):
        _as_of_ns("yesterday-ish")
