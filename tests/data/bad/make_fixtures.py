"""Rebuild the bad-input fixtures in this folder from the real-data sample (see PROVENANCE.md).

Needs the sample folder, named on the command line; tests never run this and never need the
sample. Run from the repository root, e.g. with the sample beside the repository:

    python tests/data/bad/make_fixtures.py ../shared/data/real
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import gzip
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
# The sample's files, set by use_sample() from the command line (no default: the sample is not
# part of the repository).
FNSPID_AAPL = YF_NVDA = PARQUET = Path()
HEADER = "Date,Open,High,Low,Close,Adj Close,Volume"


def aapl_lines(lo: str, hi: str) -> list[str]:
    """Data lines of the raw FNSPID aapl.csv with lo <= Date <= hi, byte for byte."""
    return [ln for ln in FNSPID_AAPL.read_text().splitlines()[1:] if lo <= ln[:10] <= hi]


def set_field(line: str, i: int, value: str) -> str:
    f = line.split(",")
    f[i] = value
    return ",".join(f)


def fnspid_lines_from_parquet(ticker: str, lo: str, hi: str, undo_split_fix: bool = False) -> list[str]:
    """FNSPID-format lines rebuilt from the sample parquet (whose ZD rows came from FNSPID CSVs)."""
    df = (
        pl.read_parquet(PARQUET)
        .filter(
            (pl.col("ticker") == ticker)
            & pl.col("price_basis").str.starts_with("raw_ohlc")
            & pl.col("date").is_between(dt.datetime.fromisoformat(lo), dt.datetime.fromisoformat(hi))
        )
        .sort("date")
    )
    out = []
    for r in df.iter_rows(named=True):
        k = 20.0 if undo_split_fix and r["split_fix_applied"] else 1.0
        vals = [r[c] * k for c in ("open", "high", "low", "close", "adj_close")]
        vol = round(r["volume"] / k)
        out.append(",".join([r["date"].date().isoformat(), *(repr(v) for v in vals), str(vol)]))
    return out


def use_sample(real: Path) -> None:
    """Read the sample at ``real`` (the folder with PROVENANCE.md, raw/ and prices/)."""
    global FNSPID_AAPL, YF_NVDA, PARQUET
    FNSPID_AAPL = real / "raw" / "fnspid_prices" / "aapl.csv"
    YF_NVDA = real / "raw" / "yfinance" / "NVDA_historical_data.csv"
    PARQUET = real / "prices" / "prices.parquet"
    missing = [str(p) for p in (FNSPID_AAPL, YF_NVDA, PARQUET) if not p.is_file()]
    if missing:
        raise SystemExit(f"not the real development sample: {real} lacks {', '.join(missing)}")


def write(rel: str, lines: list[str]) -> None:
    p = HERE / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("\n".join(lines) + "\n")


def close_fixtures() -> None:
    """(a) close <= 0, missing or NaN while adj_close is valid: a FNSPID CSV and a parquet."""
    rows = aapl_lines("2021-01-04", "2021-01-15")
    rows[2] = set_field(rows[2], 4, "0.0")  # 2021-01-06
    rows[5] = set_field(rows[5], 4, "-" + rows[5].split(",")[4])  # 2021-01-11: sign flipped
    rows[7] = set_field(rows[7], 4, "")  # 2021-01-13: close missing
    write("prices/close_bad/aapl.csv", [HEADER, *rows])

    # (a) in a parquet: a NaN close in a source that gives closes, beside an auto-adjusted source
    src = pl.read_parquet(PARQUET)
    window = pl.col("date").is_between(dt.datetime(2021, 3, 1), dt.datetime(2021, 3, 5))
    amd = src.filter((pl.col("ticker") == "AMD") & window).sort("date")
    meta = src.filter((pl.col("ticker") == "META") & window).sort("date")
    amd = amd.with_columns(pl.when(pl.int_range(0, pl.len()) == 2).then(float("nan")).otherwise(pl.col("close")).alias("close"))
    pl.concat([amd, meta]).write_parquet(HERE / "prices" / "close_nan_parquet" / "prices.parquet")


def ohlc_range_fixtures() -> None:
    """(b) bars outside their own high-low range: FNSPID CSVs and the yfinance format."""
    # high below low, close above high (FNSPID CSV) + QQQ's real 1-cent open above high (kept)
    rows = aapl_lines("2021-02-01", "2021-02-05")
    f = rows[1].split(",")
    rows[1] = ",".join([f[0], f[1], f[3], f[2], *f[4:]])  # 2021-02-02: High and Low swapped
    f = rows[3].split(",")
    rows[3] = set_field(rows[3], 4, repr(round(float(f[2]) * 1.05, 4)))  # 2021-02-04: close 5% above high
    write("prices/ohlc_range/aapl.csv", [HEADER, *rows])
    write("prices/ohlc_range/qqq.csv", [HEADER, *fnspid_lines_from_parquet("QQQ", "2019-07-16", "2019-07-23")])

    # (b) in the yfinance two-row-header format
    lines = YF_NVDA.read_text().splitlines()
    data = [ln for ln in lines[2:] if "2021-06-01" <= ln[:10] <= "2021-06-07"]
    f = data[2].split(",")  # Date,Close,High,Low,Open,Volume
    data[2] = ",".join([f[0], f[1], f[3], f[2], *f[4:]])  # 2021-06-03: High and Low swapped
    write("prices/yfinance_high_low/NVDA_historical_data.csv", [*lines[:2], *data])


def move_and_session_fixtures() -> None:
    """(c) large moves, one real and one a split-basis error; (d) a missing session."""
    # (c) a real crash (AAPL 2000-09-29, -51.9%) and FNSPID's GOOG split-basis error (-94.9%)
    write("prices/large_move_real/aapl.csv", [HEADER, *aapl_lines("2000-09-25", "2000-10-03")])
    write("prices/large_move_split_error/goog.csv", [HEADER, *fnspid_lines_from_parquet("GOOG", "2020-06-29", "2020-07-10", undo_split_fix=True)])

    # (d) a missing session: AAPL without 2021-03-15, QQQ complete (for the label check)
    rows = [r for r in aapl_lines("2021-01-29", "2021-03-26") if not r.startswith("2021-03-15")]
    write("prices/missing_session/aapl.csv", [HEADER, *rows])
    write("prices/missing_session/qqq.csv", [HEADER, *fnspid_lines_from_parquet("QQQ", "2021-01-29", "2021-03-26")])


def unparseable_fixtures() -> None:
    """(e) files that cannot be parsed: an unclosed quote, a short row, a truncated parquet, a blank line."""
    rows = aapl_lines("2021-01-04", "2021-01-08")
    rows[2] = set_field(rows[2], 4, '"' + rows[2].split(",")[4])  # line 4: a quote that never closes
    write("prices/unterminated_quote/aapl.csv", [HEADER, *rows])
    rows = aapl_lines("2021-01-04", "2021-01-08")
    rows[3] = rows[3].rsplit(",", 1)[0]  # line 5: the Volume field lost
    write("prices/ragged_row/aapl.csv", [HEADER, *rows])
    raw = (HERE / "prices" / "close_nan_parquet" / "prices.parquet").read_bytes()
    (HERE / "prices" / "corrupt_parquet").mkdir(parents=True, exist_ok=True)
    (HERE / "prices" / "corrupt_parquet" / "prices.parquet").write_bytes(raw[: len(raw) // 2])

    # a blank line inside the data
    rows = aapl_lines("2021-01-04", "2021-01-08")
    write("prices/blank_line/aapl.csv", [HEADER, *rows[:2], "", *rows[2:]])  # line 4 is empty


def bad_value_fixtures() -> None:
    """Dates with something after them, cells that are not numbers, a split basis that jumps."""
    # dates with something after them: junk and a third day digit are not dates; an exporter's time part is
    rows = aapl_lines("2021-01-04", "2021-01-11")
    rows[1] = rows[1].replace("2021-01-05,", "2021-01-05xyz,", 1)
    rows[2] = rows[2].replace("2021-01-06,", "2021-01-063,", 1)
    rows[3] = rows[3].replace("2021-01-07,", "2021-01-07 00:00:00-05:00,", 1)
    write("prices/junk_date/aapl.csv", [HEADER, *rows])

    # cells that are not numbers
    rows = aapl_lines("2021-01-04", "2021-01-08")
    rows[1] = set_field(rows[1], 4, "#N/A")  # 2021-01-05
    rows[3] = set_field(rows[3], 6, rows[3].split(",")[6].replace("0", "O", 1))  # 2021-01-07: letter O
    write("prices/bad_number/aapl.csv", [HEADER, *rows])

    # a split basis that changes inside the file: OHLC from 2021-01-11 divided by 1.45, Adj Close kept
    rows = aapl_lines("2021-01-04", "2021-01-15")
    for i in range(5, len(rows)):
        f = rows[i].split(",")
        rows[i] = ",".join([f[0], *(repr(round(float(v) / 1.45, 6)) for v in f[1:5]), *f[5:]])
    write("prices/basis_jump/aapl.csv", [HEADER, *rows])


def empty_and_odd_file_fixtures() -> None:
    """Files that hold no bars, or no line breaks, or are compressed under a .csv name."""
    write("prices/header_only/aapl.csv", [HEADER])
    rows = aapl_lines("2021-01-04", "2021-01-29")
    (HERE / "prices" / "no_line_breaks").mkdir(parents=True, exist_ok=True)
    (HERE / "prices" / "no_line_breaks" / "aapl.csv").write_text(" ".join([HEADER, *rows]))  # one line, no line break
    (HERE / "prices" / "gzip_named_csv").mkdir(parents=True, exist_ok=True)
    (HERE / "prices" / "gzip_named_csv" / "aapl.csv").write_bytes(gzip.compress(("\n".join([HEADER, *rows[:5]]) + "\n").encode(), mtime=0))


def main() -> None:
    """Every price fixture, in this order (the corrupt parquet is cut from the NaN-close one)."""
    close_fixtures()
    ohlc_range_fixtures()
    move_and_session_fixtures()
    unparseable_fixtures()
    bad_value_fixtures()
    empty_and_odd_file_fixtures()


def news_fixtures() -> None:
    """News fixtures from the two real FNSPID rows of tests/data/news_clock/fnspid_nasdaq.csv."""
    src = HERE.parents[0] / "news_clock" / "fnspid_nasdaq.csv"
    with src.open(newline="", encoding="utf-8") as fh:
        header, *recs = list(csv.reader(fh))

    def out(name: str, records: list[list[str]]) -> None:
        with (HERE / "news" / name).open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, lineterminator="\n").writerows([header, *records])

    a, b = recs[0], recs[1]
    out("ragged.csv", [a, b[:3], [*b[:3], b[3] + "-2", *b[4:], "extra"]])  # rows 1 and 2: 3 and 12 fields
    out("junk_date.csv", [a, [b[0].replace(" 00:00:00+00:00", "xyz"), *b[1:]]])
    out("naive_trusted.csv", [a, ["2021-12-31 14:05:00", *b[1:]]])  # a time of day with no offset
    out("no_title.csv", [a, [b[0], "", *b[2:]]])  # row 1: no Article_title, its URL has a slug
    out("early.csv", [a, ["2021-12-01 00:00:00+00:00", *b[1:3], b[3] + "-early", *b[4:]]])
    long = [b[0], b[1], b[2], b[3] + "-long", b[4], b[5], (b[6] + " ") * (5000 // len(b[6]) + 1), *b[7:]]
    out("long_record.csv", [a, long, b])  # row 1: an article of about 5 KB
    (HERE / "news" / "gzip_named.csv").write_bytes(gzip.compress(src.read_bytes(), mtime=0))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sample", type=Path, help="the real-data sample folder (shared/data/real)")
    use_sample(ap.parse_args().sample)
    (HERE / "prices" / "close_nan_parquet").mkdir(parents=True, exist_ok=True)
    main()
    news_fixtures()
