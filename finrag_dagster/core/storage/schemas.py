"""The schemas of the source, evidence and experience-tree tables, declared once (docs/method.md §2).

A :class:`TableSpec` names the table, its pyarrow schema, how it is partitioned in the lake
(its hive keys: ``("date",)`` gives ``<table>/date=YYYY-MM-DD/part-0.parquet``,
``("variant", "date")`` gives ``<table>/variant=V/date=YYYY-MM-DD/part-0.parquet``, ``()`` gives
``<table>/part-0.parquet``)
and the columns that order its rows, so the same inputs always give the same bytes.
The hive key columns (``date``, ``variant``) live in the path, never inside the file.

This module only declares. The later stages declare their tables next to the code that writes
them, and each SQL model in its header; :mod:`finrag_dagster.core.storage.catalog` collects them all and
hands them to the :class:`~finrag_dagster.core.storage.lake.Lake`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

UTC_TS = pa.timestamp("us", tz="UTC")
EMBED_DIM = 384  # all-MiniLM-L6-v2
EMBEDDING = pa.list_(pa.float32(), EMBED_DIM)


@dataclass(frozen=True)
class TableSpec:
    name: str
    schema: pa.Schema
    hive: tuple[str, ...]  # path keys in order, e.g. ("date",), ("variant", "date"), ()
    sort_by: tuple[str, ...]
    description: str = ""
    decision_time: bool = False  # covered by the time-travel test (docs/method.md §1)
    extra: dict = field(default_factory=dict)
    # columns of ``schema`` a partition may leave out: the lineage of an extension beyond the papers,
    # written only when it is on, so that the papers' settings keep their bytes (storage/lake.py conform)
    optional: tuple[str, ...] = ()


def _s(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
    return pa.schema([pa.field(n, t, nullable=nullable) for n, t, nullable in fields])


UNIVERSE = TableSpec(
    "universe",
    _s(
        ("ticker", pa.string(), False),
        ("company", pa.string(), False),
        ("sector", pa.string(), False),
        ("sub_industry", pa.string(), True),
        ("cik", pa.int64(), True),
        ("aliases", pa.string(), False),  # '|'-separated lower-case names used to parse queries
        ("is_benchmark", pa.bool_(), False),
    ),
    (),
    ("ticker",),
    "Tickers with sector and CIK; the market proxy (QQQ) flagged is_benchmark.",
)

MEMBERSHIP = TableSpec(
    "membership",
    _s(
        ("ticker", pa.string(), False),
        ("start", pa.date32(), False),
        ("end", pa.date32(), True),  # null: still a member
    ),
    (),
    ("ticker", "start"),
    "Universe membership intervals (inclusive), when a membership file is configured: anchors of a "
    "ticker exist only on decision days inside one of its intervals (no survivorship bias).",
)

NEWS_RAW = TableSpec(
    "news_raw",
    _s(
        ("news_id", pa.string(), False),
        ("ticker", pa.string(), False),
        ("public_time", UTC_TS, False),
        ("source_time", UTC_TS, False),
        ("time_precision", pa.string(), False),  # "second" | "date"
        ("title", pa.string(), False),
        ("summary", pa.string(), False),
        ("article", pa.string(), False),
        ("url", pa.string(), False),
        ("publisher", pa.string(), False),
        ("source_file", pa.string(), False),
        ("source_row", pa.int64(), False),
    ),
    ("date",),
    ("public_time", "news_id"),
    "News rows accepted from FNSPID-format files, partitioned by decision day.",
)

PRICES = TableSpec(
    "prices",
    _s(
        ("ticker", pa.string(), False),
        ("open", pa.float64(), True),
        ("high", pa.float64(), True),
        ("low", pa.float64(), True),
        ("close", pa.float64(), True),
        ("adj_close", pa.float64(), False),
        ("volume", pa.int64(), True),
        ("source_file", pa.string(), False),
    ),
    ("date",),
    ("ticker",),
    "Daily bars (adjusted close used everywhere), QQQ included; one partition per trading day.",
)

FILINGS_RAW = TableSpec(
    "filings_raw",
    _s(
        ("accession", pa.string(), False),
        ("cik", pa.int64(), False),
        ("ticker", pa.string(), False),
        ("company", pa.string(), False),
        ("form_type", pa.string(), False),
        ("public_time", UTC_TS, False),  # EDGAR acceptance datetime, never the filing date
        ("acceptance_source", pa.string(), False),
        ("filed_date", pa.date32(), True),
        ("report_date", pa.date32(), True),
        ("fiscal_period", pa.string(), True),
        ("items", pa.string(), False),
        ("text", pa.string(), False),  # full text when available, "" for metadata-only rows
        ("source_file", pa.string(), False),
    ),
    ("date",),
    ("public_time", "accession"),
    "EDGAR filings (8-K, 10-Q, 10-K and amendments) by acceptance time, with text when present.",
)

EVIDENCE = TableSpec(
    "evidence",
    _s(
        ("passage_id", pa.string(), False),
        ("source_family", pa.string(), False),  # "news" | "sec_filing"
        ("doc_id", pa.string(), False),  # news_id or accession
        ("ticker", pa.string(), False),
        ("sector", pa.string(), False),
        ("public_time", UTC_TS, False),
        ("time_precision", pa.string(), False),
        ("form_type", pa.string(), True),
        ("item", pa.string(), True),
        ("fiscal_period", pa.string(), True),
        ("url", pa.string(), False),
        ("title", pa.string(), False),
        ("title_key", pa.string(), False),
        ("text", pa.string(), False),
        ("dup_cluster", pa.string(), False),
        ("embedding", EMBEDDING, False),
    ),
    ("date",),
    ("public_time", "passage_id"),
    "Passages (news items, filing item sections) with near-duplicate cluster and MiniLM embedding.",
    decision_time=True,
)

ANCHORS = TableSpec(
    "anchors",
    _s(
        ("anchor_id", pa.string(), False),
        ("passage_id", pa.string(), False),
        ("ticker", pa.string(), False),
        ("sector", pa.string(), False),
        ("public_time", UTC_TS, False),
        ("time_precision", pa.string(), False),
        ("decision_time", UTC_TS, False),
        ("session", pa.string(), False),  # pre_market | regular | after_close | non_trading_day | date_only
        ("headline", pa.string(), False),
        ("summary", pa.string(), False),
        ("url", pa.string(), False),
        ("event_type", pa.string(), False),
        ("cue_counts", pa.string(), False),  # JSON of the Table 5 cue counts
        ("dup_cluster", pa.string(), False),
    ),
    ("date",),
    ("public_time", "anchor_id"),
    "News event anchors of decision day D with their Table 5 event type.",
    decision_time=True,
)

CONTEXT_CARDS = TableSpec(
    "context_cards",
    _s(
        ("ticker", pa.string(), False),
        ("as_of", UTC_TS, False),
        ("ret_1d", pa.float64(), True),
        ("ret_5d", pa.float64(), True),
        ("ret_20d", pa.float64(), True),
        ("mkt_ret_1d", pa.float64(), True),
        ("mkt_ret_5d", pa.float64(), True),
        ("mkt_ret_20d", pa.float64(), True),
        ("rel_5d", pa.float64(), True),
        ("rel_20d", pa.float64(), True),
        ("vol_20d", pa.float64(), True),
        ("vol_252d", pa.float64(), True),
        ("mkt_vol_20d", pa.float64(), True),
        ("mkt_vol_252d", pa.float64(), True),
        ("momentum_state", pa.string(), False),
        ("relative_state", pa.string(), False),
        ("risk_state", pa.string(), False),
        ("market_trend", pa.string(), False),
        ("card_text", pa.string(), False),
    ),
    ("date",),
    ("ticker",),
    "Market-context card per ticker and decision day, from adjusted closes up to close(D) only.",
    decision_time=True,
)

QUARANTINE = TableSpec(
    "quarantine",
    _s(
        ("source_file", pa.string(), False),
        ("source_row", pa.int64(), False),
        ("reason", pa.string(), False),
        ("raw", pa.string(), False),  # the offending row as JSON
        ("rows", pa.int64(), False),  # source rows this row stands for (>1: a summary row)
    ),
    ("source_table",),
    ("source_file", "source_row", "reason"),
    "Rejected input rows with the reason; rows in = accepted + sum(rows) for every source. News rows of "
    "tickers outside the universe are summarised: one row per file and ticker, at its first row, with "
    "their count in `rows`.",
)

SOURCE_FLAGS = TableSpec(
    "source_flags",
    _s(
        ("source_file", pa.string(), False),
        ("source_row", pa.int64(), False),
        ("ticker", pa.string(), True),
        ("date", pa.date32(), True),  # the row's decision day or bar date
        ("flag", pa.string(), False),
        ("detail", pa.string(), False),
    ),
    ("source_table",),
    ("source_file", "source_row", "flag"),
    "Accepted input rows that deserve a look (a repaired encoding, an unexplained price move, a "
    "missing session), with what was seen; a flag never drops a row.",
)

EXPERIENCE_TREE = TableSpec(
    "experience_tree",
    _s(
        ("factor_index", pa.int32(), False),  # layer-1 position (selection breaks ties by it)
        ("leaf_index", pa.int32(), True),  # position under the factor; null: a factor with no leaf yet
        ("leaf_id", pa.string(), True),
        ("q", pa.list_(pa.float64()), True),  # utility per horizon in [0, 2 q0], in the content row's horizon order
        ("n_recall", pa.int64(), True),
        ("n_hit", pa.int64(), True),
    ),
    ("tree_id", "date"),
    ("factor_index", "leaf_index"),
    "Tree-of-Experience state used on decision day D (seed 002 §4.2, Table 5): one row per leaf (its position, "
    "id, Q per horizon, recall/hit), one row with null leaf columns per factor without a leaf; the text and "
    "embedding of each position are in experience_leaves.",
    decision_time=True,
)

EXPERIENCE_LEAVES = TableSpec(
    "experience_leaves",
    _s(
        ("factor_index", pa.int32(), False),
        ("factor", pa.string(), False),
        ("keywords", pa.list_(pa.string()), False),  # the factor's layer-1 match keywords
        ("leaf_index", pa.int32(), True),  # null: the row of a factor with no leaf yet
        ("leaf_id", pa.string(), True),
        ("principle", pa.string(), True),  # the layer-2 analytical principle (analysis direction)
        ("support", pa.int64(), True),  # pre-evaluation anchors the principle was induced from (0: expanded)
        ("embedding", pa.list_(pa.float32()), True),  # unit vector of the principle (any dimension)
        ("horizons", pa.list_(pa.string()), True),  # the horizons of q, in order
    ),
    ("tree_id", "date"),
    ("factor_index", "leaf_index"),
    "Content of the Tree-of-Experience positions (seed 002 §4.2), written once: partition date=D holds the rows "
    "of tree_id that first appeared, or changed, in the tree of decision day D (factor, keywords, principle, "
    "support, embedding); the tree of D reads the latest version dated <= D of each position of its state.",
    decision_time=True,
)
