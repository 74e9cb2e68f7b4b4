"""Through the Dagster assets: flagged rows land in `source_flags`, the membership file in
`membership`, and news after calendar.end in the quarantine (not silently outside every partition)."""

import datetime as dt
import json

import polars as pl

from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake
from finrag_dagster.pipeline import run_range
from tests.instance import pooled_instance

HEADER = b"Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"


def test_flags_membership_and_late_news_through_the_assets(tmp_path):
    (tmp_path / "tickers.csv").write_text("ticker,Security,gics_sector\nAAA,Aaa Corp,Information Technology\nQQQ,QQQ,\n")
    (tmp_path / "membership.csv").write_text("ticker,start,end\nAAA,2019-01-02,\n")
    (tmp_path / "news.csv").write_bytes(
        HEADER
        + b"2019-01-03 00:00:00+00:00,Caf\xe9 chain deal,AAA,u1,P,,Body,,,,\n"  # latin-1 byte: repaired and flagged
        + b"2019-01-04 00:00:00+00:00,Plain,AAA,u2,P,,Body,,,,\n"
        + b"2019-03-01 00:00:00+00:00,After the end,AAA,u3,P,,Body,,,,\n"  # decided after calendar.end
    )
    (tmp_path / "prices").mkdir()
    rows = "\n".join(f"{d},10,11,9,10,10,100" for d in ("2019-01-02", "2019-01-03", "2019-01-04", "2019-01-07"))
    for t in ("aaa", "qqq"):
        (tmp_path / "prices" / f"{t}.csv").write_text("Date,Open,High,Low,Close,Adj Close,Volume\n" + rows + "\n")
    s = Settings(
        lake_dir=tmp_path / "lake",
        sources={
            "kind": "files",
            "universe": str(tmp_path / "tickers.csv"),
            "news": [str(tmp_path / "news.csv")],
            "prices": [str(tmp_path / "prices" / "*.csv")],
            "membership": str(tmp_path / "membership.csv"),
        },
        calendar={"start": dt.date(2019, 1, 2), "end": dt.date(2019, 1, 31), "decision_start": dt.date(2019, 1, 2)},
    )
    with pooled_instance() as inst:
        results = run_range(s, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "news_raw"])
    (check,) = [c for r in results for c in r.get_asset_check_evaluations() if c.check_name == "rows_reconcile"]
    assert check.passed and check.metadata["rows_in_files"].value == 3
    lake = Lake(tmp_path / "lake")
    flags = lake.read("source_flags", source_table="news_raw")
    assert flags.select("source_row", "ticker", "flag").rows() == [(0, "AAA", "non-UTF-8 bytes replaced by U+FFFD")]
    assert flags["date"].to_list() == [dt.date(2019, 1, 4)]
    q = lake.read("quarantine", source_table="news_raw")
    assert q["reason"].to_list() == ["decision day after the calendar's end (calendar.end)"]
    news = lake.read("news_raw")
    assert sorted(news["url"]) == ["u1", "u2"] and news.filter(pl.col("url") == "u1")["title"][0] == "Caf\ufffd chain deal"
    assert lake.read("membership").rows() == [("AAA", dt.date(2019, 1, 2), None)]


def test_rows_counted_in_the_files_catch_a_loader_that_loses_a_row(tmp_path, monkeypatch):
    from finrag_dagster.sources.news import segment

    (tmp_path / "tickers.csv").write_text("ticker,Security\nAAA,Aaa Corp\nQQQ,QQQ\n")
    (tmp_path / "news.csv").write_bytes(HEADER + b"2019-01-03 00:00:00+00:00,One,AAA,u1,P,,B,,,,\n2019-01-04 00:00:00+00:00,Two,AAA,u2,P,,B,,,,\n")
    s = Settings(
        lake_dir=tmp_path / "lake",
        sources={
            "kind": "files",
            "universe": str(tmp_path / "tickers.csv"),
            "news": [str(tmp_path / "news.csv")],
            "prices": [str(tmp_path / "none.csv")],
        },
        calendar={"start": dt.date(2019, 1, 2), "end": dt.date(2019, 1, 31), "decision_start": dt.date(2019, 1, 2)},
    )
    scan = segment.news_source

    def lossy(path):  # a reader that loses the first row before anything counts it
        lf, cols, repaired = scan(path)
        return lf.slice(1), cols, repaired

    monkeypatch.setattr(segment, "news_source", lossy)  # the name the staging loader (_open_news) calls
    with pooled_instance() as inst:
        results = run_range(s, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "news_raw"])
    (check,) = [c for r in results for c in r.get_asset_check_evaluations() if c.check_name == "rows_reconcile"]
    assert check.metadata["rows_in"].value == 1 and check.metadata["rows_in_files"].value == 2
    assert not check.passed


def _news_meta(results) -> dict:
    ms = [
        e.materialization.metadata for r in results for e in r.get_asset_materialization_events() if e.asset_key.path == ["news_raw"]
    ]  # one event per partition of the run, the same metadata
    return {k: v.value for k, v in ms[0].items()}


def test_a_rerun_of_the_news_asset_reads_no_row_and_rewrites_no_partition(tmp_path):
    (tmp_path / "tickers.csv").write_text("ticker,Security\nAAA,Aaa Corp\nQQQ,QQQ\n")
    news = tmp_path / "news.csv"
    news.write_bytes(HEADER + b"2019-01-03 00:00:00+00:00,One,AAA,u1,P,,B,,,,\n2019-01-04 00:00:00+00:00,Two,ZZZ,u2,P,,B,,,,\n")
    s = Settings(
        lake_dir=tmp_path / "lake",
        sources={"kind": "files", "universe": str(tmp_path / "tickers.csv"), "news": [str(news)], "prices": [str(tmp_path / "none.csv")]},
        calendar={"start": dt.date(2019, 1, 2), "end": dt.date(2019, 1, 31), "decision_start": dt.date(2019, 1, 2)},
    )
    lake = Lake(tmp_path / "lake")
    with pooled_instance() as inst:
        first = _news_meta(run_range(s, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "news_raw"]))
        jan4 = lake.path("news_raw", date="2019-01-04")
        stamp = jan4.stat().st_mtime_ns
        again = _news_meta(run_range(s, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "news_raw"]))
        assert jan4.stat().st_mtime_ns == stamp  # not rewritten
        with open(news, "ab") as fh:  # a new row lands for Jan 7
            fh.write(b"2019-01-07 00:00:00+00:00,Three,AAA,u3,P,,B,,,,\n")
        grown = _news_meta(run_range(s, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "news_raw"]))
    assert first["source_rows_read_this_run"] == 2 and first["source_files"] == {"news.csv": "read"}
    assert first["source_rows_quarantined"] == 1 and first["source_rows_accepted"] == 1
    assert again["source_rows_read_this_run"] == 0 and again["source_files"] == {"news.csv": "unchanged"}
    assert again["partitions_unchanged"] == again["partitions_written"] == 21
    assert grown["source_rows_read_this_run"] == 1 and grown["source_files"] == {"news.csv": "appended"}
    assert grown["partitions_unchanged"] == 20  # only Jan 8 (decided the session after Jan 7's date) changed
    assert lake.read("news_raw")["url"].sort().to_list() == ["u1", "u3"]


def _filings_settings(tmp_path):
    """Files-mode settings over one submissions JSON of three Apple filings (one an S-8, quarantined)."""
    sub = {
        "cik": "0000320193",
        "name": "Apple Inc.",
        "tickers": ["AAPL"],
        "fiscalYearEnd": "0928",
        "filings": {
            "recent": {
                "accessionNumber": ["0000320193-19-000001", "0000320193-19-000002", "0000320193-19-000003"],
                "form": ["8-K", "S-8", "10-Q"],
                "acceptanceDateTime": ["2019-01-03T21:30:00.000Z", "2019-01-04T21:30:00.000Z", "2019-01-07T21:30:00.000Z"],
                "filingDate": ["2019-01-03", "2019-01-04", "2019-01-07"],
                "reportDate": ["", "", "2018-12-29"],
                "items": ["2.02", "", ""],
            }
        },
    }
    (tmp_path / "CIK0000320193.json").write_text(json.dumps(sub))
    (tmp_path / "tickers.csv").write_text("ticker,cik,Security\nAAPL,320193,Apple Inc.\nQQQ,,QQQ\n")
    return Settings(
        lake_dir=tmp_path / "lake",
        sources={
            "kind": "files",
            "universe": str(tmp_path / "tickers.csv"),
            "filings_index": [str(tmp_path / "CIK0000320193.json")],
            "prices": [str(tmp_path / "none.csv")],
        },
        calendar={"start": dt.date(2019, 1, 2), "end": dt.date(2019, 1, 31), "decision_start": dt.date(2019, 1, 2)},
    )


def _reconcile(settings):
    with pooled_instance() as inst:
        results = run_range(settings, end=dt.date(2019, 1, 31), instance=inst, only=["universe", "filings_raw"])
    (check,) = [c for r in results for c in r.get_asset_check_evaluations() if c.check_name == "rows_reconcile"]
    return check.passed, {k: v.value for k, v in check.metadata.items()}


def test_filings_counted_in_the_files_catch_a_loader_that_loses_a_filing(tmp_path, monkeypatch):
    from finrag_dagster.sources import edgar

    s = _filings_settings(tmp_path)
    passed, m = _reconcile(s)
    assert passed and m == {"rows_in": 3, "accepted": 2, "quarantined": 1, "rows_in_files": 3}
    read = edgar.read_submissions_json

    def lossy(path, file_index):  # a reader that loses the last filing before anything counts it
        return read(path, file_index)[:-1]

    monkeypatch.setattr(edgar.index_sources, "read_submissions_json", lossy)  # the name _read_records calls
    passed, m = _reconcile(s)
    # the loader's own accounting still balances (rows in = accepted + quarantined) ...
    assert m == {"rows_in": 2, "accepted": 1, "quarantined": 1, "rows_in_files": 3}
    assert not passed  # ... only the count from the files sees the lost 10-Q
