"""Price loader: FNSPID CSV, yfinance two-row header, the sample parquet, one source per ticker.

The real files are the slices in tests/data/real (PROVENANCE.md there): the yfinance NVDA export for
2020-01-02 .. 2020-03-31 (62 rows), FNSPID's aapl.csv for 1999-11-01 .. 2000-12-29 (295 rows) and the
sample parquet's bars for 2023-03-01 .. 2023-05-31 (1,466 rows).
"""

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.storage.schemas import PRICES
from finrag_dagster.sources import prices
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.prices import load_prices

UNIVERSE = {
    "AAL",
    "AAPL",
    "AMD",
    "AMGN",
    "AMZN",
    "BIIB",
    "CMCSA",
    "COST",
    "GOOG",
    "GOOGL",
    "INTC",
    "META",
    "MSFT",
    "MU",
    "NVDA",
    "PEP",
    "PYPL",
    "QQQ",
    "SBUX",
    "TSLA",
}
FNSPID_HEADER = "Date,Open,High,Low,Close,Adj Close,Volume\n"
BAD = Path(__file__).resolve().parents[1] / "data" / "bad" / "prices"


def test_yfinance_two_row_header(real_data):
    f = real_data / "raw" / "yfinance" / "NVDA_historical_data.csv"
    n_data = len(f.read_text().splitlines()) - 2
    r = load_prices(f, UNIVERSE)
    assert r.rows_in == n_data == 62 and r.quarantine.height == 0  # the slice's sessions, Jan-Mar 2020
    acc = r.accepted
    assert acc.columns == PRICES.schema.names + ["date"]
    assert set(acc["ticker"]) == {"NVDA"}  # from the second header row, not the file stem
    first = acc.row(0, named=True)
    assert first["date"] == dt.date(2020, 1, 2)
    assert first["adj_close"] == pytest.approx(5.971410274505615)
    assert first["open"] == pytest.approx(5.942537823696139)
    assert first["volume"] == 237536000
    assert (acc["close"] == acc["adj_close"]).all()  # auto-adjusted export: Close is the adjusted close


def test_fnspid_price_csv(real_data):
    r = load_prices(real_data / "raw" / "fnspid_prices" / "aapl.csv", UNIVERSE)
    assert r.rows_in == 295  # the slice: 1999-11-01 .. 2000-12-29
    acc = r.accepted
    assert set(acc["ticker"]) == {"AAPL"}
    assert acc["date"].min() == dt.date(2000, 1, 3)  # the calendar starts in 2000
    assert set(r.quarantine["reason"]) == {prices.R_OUT_OF_CALENDAR}
    assert r.quarantine.height == 43 and acc.height == 295 - 43  # the 43 sessions of Nov-Dec 1999
    assert (acc["adj_close"] < acc["close"]).all()  # later dividends: Adj Close below Close
    assert acc.schema["date"] == pl.Date and acc.schema["volume"] == pl.Int64
    # Apple's real -51.9% day is flagged, not dropped
    assert r.flags.select("ticker", "date", "flag").rows() == [("AAPL", dt.date(2000, 9, 29), prices.F_LARGE_MOVE)]


def test_sample_parquet_keeps_one_source_per_ticker(real_data):
    r = load_prices(real_data / "prices" / "prices.parquet", UNIVERSE)
    assert r.rows_in == 1466  # the slice: 2023-03-01 .. 2023-05-31
    acc = r.accepted
    assert acc.select("ticker", "date").is_unique().all()
    # AMZN, MSFT, NVDA, TSLA come from two repos in the file; the second source's rows are quarantined
    q = r.quarantine
    assert q.height == 250  # the FNSPID rows: 64 sessions each of MSFT, NVDA, TSLA, 58 of AMZN (from 2023-03-09)
    assert q["reason"].str.starts_with("ticker already supplied by an earlier source: prices.parquet:").all()
    dropped = {pl.Series([s]).str.json_decode()[0]["ticker"] for s in q["raw"]}
    assert dropped == {"AMZN", "MSFT", "NVDA", "TSLA"}
    src = pl.read_parquet(real_data / "prices" / "prices.parquet")
    kept = src.filter(pl.col("ticker") == "MSFT").group_by("source_path").len().sort("source_path")
    assert acc.filter(pl.col("ticker") == "MSFT").height == kept["len"][0]
    assert acc.filter(pl.col("ticker") == "GOOGL")["close"].null_count() == 64  # yfinance rows (all 64): close is null
    sessions = set(nyse().sessions_in_range("2017-01-01", "2023-12-31"))
    assert set(acc["date"].unique()) <= sessions
    assert r.flags.height == 0  # no gaps, no unexplained moves beyond 50%


def test_later_files_cannot_add_a_supplied_ticker(real_data):
    paths = [
        real_data / "raw" / "yfinance" / "NVDA_historical_data.csv",
        real_data / "raw" / "fnspid_prices" / "aapl.csv",
        real_data / "prices" / "prices.parquet",
    ]
    r = load_prices(paths, UNIVERSE)
    assert r.rows_in == 62 + 295 + 1466
    # sorted paths: .../prices/prices.parquet precedes .../raw/..., so it supplies AAPL and NVDA
    csv_rows = r.quarantine.filter(pl.col("source_file").is_in(["aapl.csv", "NVDA_historical_data.csv"]))
    assert csv_rows.height == 62 + 295
    assert csv_rows["reason"].str.contains("prices.parquet").all()
    assert set(r.accepted["source_file"]) == {"prices.parquet"}
    assert r.accepted.sort("date", "ticker").equals(r.accepted)
    again = load_prices(list(reversed(paths)), UNIVERSE)  # the sorted path list decides, not argument order
    assert again.accepted.equals(r.accepted) and again.quarantine.equals(r.quarantine)


def test_malformed_rows_are_quarantined(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "aapl.csv").write_text(
        FNSPID_HEADER
        + "2021-01-04,10,11,9,10.5,10.0,100\n"  # 0 ok
        + "2021-01-02,10,11,9,10.5,10.0,100\n"  # 1 Saturday
        + "2021-01-05,10,11,9,10.5,-1.0,100\n"  # 2 negative adj close
        + "2021-01-06,10,11,9,10.5,,100\n"  # 3 missing adj close
        + "2021-01-07,10,11,9,10.5,nan,100\n"  # 4 NaN adj close
        + "2021-01-04,10,11,9,10.6,10.1,100\n"  # 5 duplicate date
        + "01/08/2021,10,11,9,10.5,10.0,100\n"  # 6 unparseable date
        + "2021-01-04,10,11,9,10.5,10.0,100\n"  # 7 duplicate date, the same bar
    )
    (tmp_path / "b" / "aapl.csv").write_text(FNSPID_HEADER + "2021-01-11,10,11,9,10.5,10.0,100\n")
    (tmp_path / "b" / "zzzz.csv").write_text(FNSPID_HEADER + "2021-01-11,10,11,9,10.5,10.0,100\n")
    r = load_prices([tmp_path / "b", tmp_path / "a" / "*.csv"], UNIVERSE)
    assert r.rows_in == 10 and r.accepted.height == 1
    assert r.accepted.row(0, named=True)["date"] == dt.date(2021, 1, 4)
    got = {(f, i): reason for f, i, reason in r.quarantine.select("source_file", "source_row", "reason").iter_rows()}
    assert got == {
        ("aapl.csv", 1): prices.R_NOT_SESSION,
        ("aapl.csv", 2): prices.R_BAD_ADJ,
        ("aapl.csv", 3): prices.R_BAD_ADJ,
        ("aapl.csv", 4): prices.R_BAD_ADJ,
        ("aapl.csv", 5): prices.R_DUPLICATE_DIFFERS + "close, adj_close",  # two versions of one bar: which fields differ
        ("aapl.csv", 6): prices.R_BAD_DATE,
        ("aapl.csv", 7): prices.R_DUPLICATE,
        ("aapl.csv", 0): "ticker already supplied by an earlier source: aapl.csv",  # b/aapl.csv: a/ sorts first
        ("zzzz.csv", 0): prices.R_NOT_UNIVERSE,
    }
    b_row = r.quarantine.filter(pl.col("raw").str.contains("2021-01-11") & pl.col("source_file").eq("aapl.csv"))
    assert b_row["reason"].to_list() == ["ticker already supplied by an earlier source: aapl.csv"]


def test_bad_paths_and_formats_are_errors(tmp_path):
    with pytest.raises(SourceError, match="matches no file"):
        load_prices(tmp_path / "*.csv", UNIVERSE)
    (tmp_path / "p.xlsx").write_text("x")
    with pytest.raises(SourceError, match="unknown price file format"):
        load_prices(tmp_path / "p.xlsx", UNIVERSE)
    (tmp_path / "q.csv").write_text("when,price\n2021-01-04,1\n")
    with pytest.raises(SourceError, match="not a price CSV"):
        load_prices(tmp_path / "q.csv", UNIVERSE)


def test_move_bound_and_bar_tolerance_are_parameters():
    moves = load_prices(BAD / "large_move_real" / "aapl.csv", UNIVERSE, max_abs_move=0.09)
    assert moves.flags.select("date", "flag").rows() == [
        (dt.date(2000, 9, 28), prices.F_LARGE_MOVE),
        (dt.date(2000, 9, 29), prices.F_LARGE_MOVE),  # +9.3%, -51.9%
    ]
    assert load_prices(BAD / "large_move_real" / "aapl.csv", UNIVERSE, max_abs_move=0.6).flags.height == 0
    qqq = BAD / "ohlc_range" / "qqq.csv"  # real bar: open 193.84 above high 193.83 on 2019-07-19
    assert load_prices(qqq, UNIVERSE).quarantine.height == 0
    strict = load_prices(qqq, UNIVERSE, ohlc_tolerance=0.0)
    assert strict.quarantine.select("source_row", "reason").rows() == [(3, prices.R_OUTSIDE_RANGE)]
    assert strict.flags.select("date", "flag").rows() == [(dt.date(2019, 7, 19), prices.F_MISSING_SESSION)]
    for bad in ({"max_abs_move": 0.0}, {"ohlc_tolerance": -0.1}):
        with pytest.raises(ValueError):
            load_prices(qqq, UNIVERSE, **bad)
