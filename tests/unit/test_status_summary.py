"""`finrag status`'s per-source summary: rows quarantined and rows flagged (kept), each with its most common reason."""

import datetime as dt

import polars as pl

from finrag_dagster.core.status import quarantine_summary
from finrag_dagster.core.tables import Lake
from finrag_dagster.sources.base import FLAG_COLUMNS, QUARANTINE_COLUMNS, empty_flags


def test_status_counts_quarantined_and_flagged_rows_per_source(tmp_path):
    lake = Lake(tmp_path)
    q = pl.DataFrame(
        {
            "source_file": ["a.csv"] * 3,
            "source_row": [1, 2, 3],
            "reason": ["ticker not in universe", "duplicate", "duplicate"],
            "raw": ["{}"] * 3,
            "rows": [40, 1, 1],
        },
        schema=QUARANTINE_COLUMNS,
    )
    flags = pl.DataFrame(
        {
            "source_file": ["a.csv"] * 3,
            "source_row": [4, 5, 6],
            "ticker": ["AAPL"] * 3,
            "date": [dt.date(2021, 1, 4)] * 3,
            "flag": ["title_from_url", "naive_time", "title_from_url"],
            "detail": ["d"] * 3,
        },
        schema=FLAG_COLUMNS,
    )
    lake.write("quarantine", q, source_table="news_raw")
    lake.write("source_flags", flags, source_table="news_raw")
    lake.write("quarantine", q.head(0), source_table="prices")
    lake.write("source_flags", empty_flags(), source_table="prices")
    got = {r["source_table"]: r for r in quarantine_summary(lake)}
    assert (got["news_raw"]["rows"], got["news_raw"]["top_reason"]) == (42, "ticker not in universe (40)")  # weighted by rows
    assert (got["news_raw"]["flagged"], got["news_raw"]["top_flag"]) == (3, "title_from_url (2)")
    assert (got["prices"]["rows"], got["prices"]["flagged"], got["prices"]["top_flag"]) == (0, 0, "")
