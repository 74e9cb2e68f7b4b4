"""Universe loader on the real tickers.csv and on small malformed files."""

import polars as pl
import pytest

from finrag_dagster.core.storage.schemas import UNIVERSE
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.universe import company_aliases, load_universe, short_name


@pytest.fixture(scope="module")
def uni(real_data):
    return load_universe(real_data / "universe" / "tickers.csv")


def test_real_universe_has_declared_schema_and_every_row(uni):
    assert uni.columns == UNIVERSE.schema.names
    assert uni.schema == pl.from_arrow(UNIVERSE.schema.empty_table()).schema
    assert uni.height == 104
    assert uni["ticker"].is_unique().all()
    assert uni["ticker"].to_list() == sorted(uni["ticker"].to_list())


def test_real_universe_fields(uni):
    aapl = uni.filter(pl.col("ticker") == "AAPL").row(0, named=True)
    assert aapl["company"] == "Apple Inc."
    assert aapl["sector"] == "Information Technology"
    assert aapl["cik"] == 320193
    assert aapl["aliases"] == "apple inc.|apple"
    assert not aapl["is_benchmark"]
    # no S&P 500 sector in the sample -> Unknown, company from the SEC title
    asml = uni.filter(pl.col("ticker") == "ASML").row(0, named=True)
    assert asml["sector"] == "Unknown" and asml["company"] == "ASML HOLDING NV"
    assert "asml" in asml["aliases"].split("|")
    # SEC state suffixes and share classes are not part of the short names
    assert "applied materials" in uni.filter(pl.col("ticker") == "AMAT")["aliases"][0].split("|")
    assert uni.filter(pl.col("ticker") == "GOOGL")["aliases"][0].split("|")[-1] == "alphabet"


def test_market_proxy_is_the_only_benchmark(uni):
    bench = uni.filter(pl.col("is_benchmark"))
    assert bench["ticker"].to_list() == ["QQQ"]
    assert bench["sector"][0] == "ETF"


def test_missing_market_ticker_is_added(tmp_path):
    f = tmp_path / "tickers.csv"
    f.write_text("ticker,cik,sec_title,Security,gics_sector,gics_sub_industry\nAAPL,320193,Apple Inc.,Apple Inc.,,\n")
    u = load_universe(f, market_ticker="SPY")
    assert u["ticker"].to_list() == ["AAPL", "SPY"]
    assert u.filter(pl.col("ticker") == "SPY")["is_benchmark"][0]
    assert u.filter(pl.col("ticker") == "AAPL")["sector"][0] == "Unknown"


def test_duplicate_ticker_is_an_error(tmp_path):
    f = tmp_path / "tickers.csv"
    f.write_text("ticker,Security\nAAPL,Apple\nMSFT,Microsoft\naapl,Apple again\n")
    with pytest.raises(SourceError, match="duplicate ticker AAPL"):
        load_universe(f)


def test_bad_universe_files_are_errors(tmp_path):
    with pytest.raises(SourceError, match="matches no file"):
        load_universe(tmp_path / "nope.csv")
    f = tmp_path / "tickers.csv"
    f.write_text("symbol,name\nAAPL,Apple\n")
    with pytest.raises(SourceError, match="no 'ticker' column"):
        load_universe(f)


def test_short_names_and_aliases():
    assert short_name("The Kraft Heinz Company") == "kraft heinz"
    assert short_name("MARRIOTT INTERNATIONAL INC /MD/") == "marriott international"
    assert short_name("Booking Holdings Inc.") == "booking"
    assert company_aliases("Meta Platforms", "Meta Platforms, Inc.") == "meta platforms|meta platforms, inc."


def test_company_and_short_name_columns_are_used(tmp_path):
    f = tmp_path / "tickers.csv"
    f.write_text(
        "ticker,company,short_name,sec_title,cik,gics_sector,gics_sub_industry\n"
        "NVDA,Nvidia,Nvidia,NVIDIA CORP,1045810,Information Technology,Semiconductors\n"
    )
    row = load_universe(f).filter(pl.col("ticker") == "NVDA").row(0, named=True)
    assert row["company"] == "Nvidia" and row["cik"] == 1045810 and row["sub_industry"] == "Semiconductors"
    assert row["aliases"] == "nvidia|nvidia corp"
