"""Vendor files rewritten every way an export can differ, generated instead of listed.

A clean small file of each CSV vendor format (FNSPID news CSV, FNSPID and yfinance price CSVs, the
prices parquet, the universe CSV) is rewritten by hypothesis: line ends LF / CRLF / CR, quoted fields
with and without newlines, UTF-8 / UTF-8 with a BOM / UTF-16 with and without a BOM / Latin-1, ``,`` ``;`` or tab between
fields and decimal commas, columns reordered, duplicated, renamed, missing, extra, an index column,
trailing commas. For every generated file, either

* the loader stops with a short :class:`SourceError` that names a cause the file really has
  ('UTF-16', 'delimiter', 'CR line ends', 'duplicate column', 'missing column', 'ragged row', and
  for the universe 'UTF-8'), and a file without such a cause is never refused; or
* every record is accounted for: the records counted here with Python's ``csv`` module on the text
  decoded with the file's own encoding (not the loader's counter) = the loader's ``rows_in`` =
  accepted + quarantined, and every accepted value equals the clean file's (all of them when the
  rewrite loses nothing). A Latin-1 news file is read with U+FFFD for its non-UTF-8 bytes, as
  docs/bad_inputs.md says: its values must equal the clean file's with that replacement, and the
  rows that carry it must be flagged.

Fast by default (``FAST`` examples per format, derandomized). A deeper run:
``FINRAG_VENDOR_EXAMPLES=500 .venv/bin/python -m pytest -q -p no:cacheprovider tests/unit/test_vendor_files_property.py``;
the test marked slow runs every format with more examples under ``make test``.

Only the required columns of a format are renamed or removed: the news format's optional columns
(Article, the summaries, Publisher, Author) are absent from some FNSPID files by design.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from finrag_dagster.sources import news
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.news import load_news
from finrag_dagster.sources.prices import load_prices
from finrag_dagster.sources.rowcount import file_rows
from finrag_dagster.sources.universe import load_universe

FAST = int(os.environ.get("FINRAG_VENDOR_EXAMPLES", "60"))
settings.register_profile(
    "vendor_fast", max_examples=FAST, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("vendor_slow", max_examples=max(FAST, 400), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------- clean files
NEWS_HEADER = list(news.FNSPID_COLUMNS)


def _news_rows(inner_newlines: bool) -> list[list[str]]:
    nl = "\n" if inner_newlines else " "
    body = [
        f'Apple said, "sales rose".{nl}Analysts at the café agreed. More text follows here.',
        f"Microsoft cut prices.{nl}{nl}A second paragraph, with commas, and more.",
        f"A company outside the universe.{nl}Nothing else.",
        f"Apple again; a semicolon and a tab\there.{nl}End.",
    ]
    return [
        ["2021-03-01 00:00:00+00:00", "Apple sales, up", "AAPL", "https://ex.com/a1", "Reuters", "Ann", body[0], "", "", "", ""],
        ["2021-03-02 00:00:00+00:00", "Microsoft prices", "MSFT", "https://ex.com/m1", "Benzinga", "", body[1], "Short sum.", "", "", ""],
        ["2021-03-02 00:00:00+00:00", "Other", "ZZZZ", "https://ex.com/z1", "Wire", "", body[2], "", "", "", ""],
        ["2021-03-03 00:00:00+00:00", 'Apple "again"', "AAPL", "https://ex.com/a2", "Reuters", "Bo", body[3], "", "", "", ""],
    ]


FNSPID_PRICE_HEADER = ["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"]
FNSPID_PRICE_ROWS = [
    ["2021-01-04", "133.52", "133.61", "126.76", "129.41", "127.16", "143301900"],
    ["2021-01-05", "128.89", "131.74", "128.43", "131.01", "128.73", "97664900"],
    ["2021-01-06", "127.72", "131.05", "126.38", "126.6", "124.4", "155088000"],
    ["2021-01-07", "128.36", "131.63", "127.86", "130.92", "128.64", "109578200"],
]
YF_HEADER = [["Price", "Close", "High", "Low", "Open", "Volume"], ["Ticker", "NVDA", "NVDA", "NVDA", "NVDA", "NVDA"], ["Date", "", "", "", "", ""]]
YF_ROWS = [
    ["2021-06-01", "162.25", "163.5", "160.1", "161.2", "23000000"],
    ["2021-06-02", "172.77", "173.9", "163.2", "163.3", "41000000"],
    ["2021-06-03", "174.9", "175.5", "170.0", "171.1", "32000000"],
]
UNIVERSE_HEADER = ["ticker", "cik", "sec_title", "Security", "gics_sector", "gics_sub_industry"]


def _universe_rows(inner_newlines: bool) -> list[list[str]]:
    nl = "\n" if inner_newlines else " "
    return [
        ["AAPL", "320193", "Apple Inc.", "Apple Inc.", "Information Technology", f"Technology Hardware,{nl}Storage & Peripherals"],
        ["MSFT", "789019", "MICROSOFT CORP", "Microsoft", "Information Technology", "Systems Software"],
        ["QQQ", "", "", "Invesco QQQ", "", ""],
        ["NSRGY", "", "NESTLE S A", "Nestlé", "Consumer Staples", "Packaged Foods"],
    ]


@dataclass(frozen=True)
class Format:
    """One vendor format: its clean table, how it is loaded, and which rewrites it admits."""

    name: str
    file_name: str
    header: tuple  # header rows (lists of cells)
    numeric: frozenset  # columns whose cells take a decimal comma
    required: tuple  # columns that may be renamed or removed (the rest are optional by format)
    fixed_first: bool  # column 0 is the index of the layout (yfinance's Price/Ticker/Date)
    load: object  # path -> LoadResult or DataFrame

    def rows(self, inner_newlines: bool) -> list[list[str]]:
        if self.name == "news":
            return _news_rows(inner_newlines)
        if self.name == "universe":
            return _universe_rows(inner_newlines)
        return [list(r) for r in (FNSPID_PRICE_ROWS if self.name == "fnspid_prices" else YF_ROWS)]


NEWS = Format(
    "news",
    "news.csv",
    (NEWS_HEADER,),
    frozenset(),
    ("Date", "Stock_symbol"),
    False,
    lambda p: load_news([p], {"AAPL", "MSFT"}, calendar_end=dt.date(2023, 12, 29)),
)
FNSPID_PRICES = Format(
    "fnspid_prices",
    "aapl.csv",
    (FNSPID_PRICE_HEADER,),
    frozenset(FNSPID_PRICE_HEADER[1:6]),
    tuple(FNSPID_PRICE_HEADER),
    False,
    lambda p: load_prices([p], {"AAPL"}),
)
YFINANCE = Format(
    "yfinance_prices", "NVDA.csv", tuple(YF_HEADER), frozenset(YF_HEADER[0][1:5]), tuple(YF_HEADER[0][1:]), True, lambda p: load_prices([p], {"NVDA"})
)
UNIVERSE = Format("universe", "tickers.csv", (UNIVERSE_HEADER,), frozenset(), ("ticker",), False, lambda p: load_universe(p))


@dataclass(frozen=True)
class Rewrite:
    line_end: str = "\n"
    inner_newlines: bool = True
    encoding: str = "utf-8"
    delimiter: str = ","
    decimal_comma: bool = False
    op: str = "none"  # reorder, duplicate, rename, missing, extra, index
    column: str = ""  # the column the op hits
    order: tuple = ()  # reorder: the new order of the movable columns
    trailing: str = "none"  # "rows": a trailing delimiter on data rows only; "all": on every row

    def causes(self, fmt: Format) -> list[str]:
        """What a loader may name when it refuses this file (empty: it must load it)."""
        out = []
        out += ["UTF-16"] if self.encoding.startswith("utf-16") else []
        out += ["delimiter"] if self.delimiter != "," else []
        out += ["CR line ends"] if self.line_end == "\r" else []
        out += ["duplicate column"] if self.op == "duplicate" else []
        out += ["missing column"] if self.op in ("rename", "missing") else []
        out += ["ragged row"] if self.trailing == "rows" and fmt.name != "news" else []  # news quarantines them
        out += ["UTF-8"] if self.encoding == "latin-1" and fmt.name == "universe" else []
        return out

    def lossless(self, fmt: Format) -> bool:
        """Whether every clean row must still be accepted (no rewrite that makes rows bad)."""
        return not (self.decimal_comma and fmt.numeric) and self.trailing != "rows"


def _apply_op(table: list[list[str]], fmt: Format, rw: Rewrite) -> list[list[str]]:
    header = table[0]
    nh = len(fmt.header)
    if rw.op == "none":
        return table
    if rw.op == "reorder":
        keep = [0] if fmt.fixed_first else []
        cols = keep + [c + len(keep) for c in rw.order]
        return [[r[i] for i in cols] for r in table]
    if rw.op == "index":
        return [[""] + r if i == 0 else [str(i - nh)] + r for i, r in enumerate(table)]  # one header row (not yfinance)
    if rw.op == "extra":
        return [r + (["Extra"] if i == 0 else [""] if i < nh else [f"x{i}"]) for i, r in enumerate(table)]
    j = header.index(rw.column)
    if rw.op == "duplicate":
        return [r[: j + 1] + [r[j]] + r[j + 1 :] for r in table]
    if rw.op == "missing":
        return [r[:j] + r[j + 1 :] for r in table]
    if rw.op == "rename":
        return [[c + "_x" if (i == 0 and k == j) else c for k, c in enumerate(r)] for i, r in enumerate(table)]
    raise AssertionError(rw.op)


def render(fmt: Format, rw: Rewrite) -> bytes:
    """The clean table of ``fmt`` rewritten as ``rw`` says, as file bytes."""
    nh = len(fmt.header)
    data = fmt.rows(rw.inner_newlines)
    if rw.decimal_comma:
        num = {i for i, h in enumerate(fmt.header[0]) if h in fmt.numeric}
        data = [[c.replace(".", ",") if i in num else c for i, c in enumerate(r)] for r in data]
    table = _apply_op([list(r) for r in fmt.header] + data, fmt, rw)
    if rw.trailing != "none":
        table = [r + [""] if (i >= nh or rw.trailing == "all") else r for i, r in enumerate(table)]
    buf = io.StringIO()
    csv.writer(buf, delimiter=rw.delimiter, lineterminator=rw.line_end).writerows(table)
    return buf.getvalue().encode(rw.encoding)


def independent_records(data: bytes, rw: Rewrite, header_rows: int) -> int:
    """Data records of the file as Python's csv module reads its text, decoded as it was written."""
    text = data.decode(rw.encoding)
    return len(list(csv.reader(io.StringIO(text, newline=""), delimiter=rw.delimiter))) - header_rows


@st.composite
def rewrites(draw, fmt: Format) -> Rewrite:
    header = fmt.header[0]
    movable = header[1:] if fmt.fixed_first else header
    ops = ["none", "none", "none", "reorder", "duplicate", "rename", "missing", "extra"] + ([] if fmt.fixed_first else ["index"])
    op = draw(st.sampled_from(ops))
    return Rewrite(
        # each rewrite is drawn as often as the clean value is: most files hold one or two of them
        line_end=draw(st.sampled_from(["\n", "\n", "\r\n", "\r"])),
        inner_newlines=draw(st.booleans()),
        encoding=draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1"])),  # utf-16: with a BOM
        delimiter=draw(st.sampled_from([",", ",", ",", ";", "\t"])),
        decimal_comma=draw(st.sampled_from([False, False, True])),
        op=op,
        column=draw(st.sampled_from(fmt.required if op in ("rename", "missing") else movable)),
        order=tuple(draw(st.permutations(range(len(movable))))),
        trailing=draw(st.sampled_from(["none", "none", "none", "rows", "all"])),
    )


# ---------------------------------------------------------------------------------------- the invariant
def _load(fmt: Format, data: bytes, counted: list | None = None):
    """The loader's result for a file of these bytes; ``counted`` gets the ``rows_reconcile``
    check's own count of it (news and prices) once it loaded."""
    with tempfile.TemporaryDirectory(prefix="finrag-vendor-") as tmp:
        path = Path(tmp) / fmt.file_name
        path.write_bytes(data)
        res = fmt.load(path)
        if counted is not None and fmt.name != "universe":
            counted.append(file_rows(path))
        return res


_CLEAN: dict = {}


def clean_result(fmt: Format, rw: Rewrite):
    """The clean file's load (with or without inner newlines; for a Latin-1 news file, with the
    documented U+FFFD replacement applied to the clean text first)."""
    key = (fmt.name, rw.inner_newlines, rw.encoding == "latin-1" and fmt.name == "news")
    if key not in _CLEAN:
        data = render(fmt, Rewrite(inner_newlines=rw.inner_newlines))
        if key[2]:
            data = data.decode().encode("latin-1").decode("utf-8", errors="replace").encode()
        _CLEAN[key] = _load(fmt, data)
    return _CLEAN[key]


def _accepted(fmt: Format, res) -> pl.DataFrame:
    if fmt.name == "universe":
        return res
    return res.accepted


def _key(fmt: Format) -> list[str]:
    return ["ticker"] if fmt.name == "universe" else ["source_row"] if fmt.name == "news" else ["ticker", "date"]


def check(fmt: Format, rw: Rewrite) -> None:
    data = render(fmt, rw)
    causes = rw.causes(fmt)
    counted: list[int] = []
    try:
        res = _load(fmt, data, counted)
    except SourceError as exc:
        msg = str(exc)
        event(f"{fmt.name}: refused")
        assert causes, f"{fmt.name} {rw}: a file with no fault was refused: {msg}"
        assert any(c in msg for c in causes), f"{fmt.name} {rw}: the error names none of {causes}: {msg}"
        assert len(msg) < 600, msg
        return
    assert not causes, f"{fmt.name} {rw}: a file with {causes} loaded"
    event(f"{fmt.name}: loaded")
    n = independent_records(data, rw, len(fmt.header))
    if fmt.name == "universe":
        assert res.height == n, f"{rw}: {n} records, {res.height} universe rows"
    else:
        assert n == res.rows_in == res.accepted.height + res.quarantined, f"{rw}: {n} records, rows_in {res.rows_in}"
        assert counted == [n], f"{rw}: rows_reconcile's count {counted} of {n} records"
    _check_values(fmt, rw, _accepted(fmt, res), _accepted(fmt, clean_result(fmt, rw)))
    if fmt.name == "news" and rw.encoding == "latin-1":
        repaired = res.accepted.filter(pl.col("article").str.contains("\ufffd", literal=True))["source_row"].to_list()
        assert res.flags.filter(pl.col("flag") == news.F_REPAIRED)["source_row"].to_list() == repaired  # the café row says so


def _check_values(fmt: Format, rw: Rewrite, got: pl.DataFrame, clean: pl.DataFrame) -> None:
    """Every accepted row equals the clean file's row of the same key (all of them when nothing was lost)."""
    key = _key(fmt)
    assert got.columns == clean.columns
    joined = got.join(clean, on=key, how="left", suffix="_clean", nulls_equal=True)
    for c in got.columns:
        if c in key:
            continue
        differs = joined.filter(pl.col(c).ne_missing(pl.col(f"{c}_clean")))
        assert differs.height == 0, f"{fmt.name} {rw}: {c} differs from the clean file's: {differs.select(*key, c, f'{c}_clean').rows()[:3]}"
    if rw.lossless(fmt):
        assert got.sort(key).equals(clean.sort(key)), f"{fmt.name} {rw}: accepted rows differ from the clean file's"


FORMATS = {f.name: f for f in (NEWS, FNSPID_PRICES, YFINANCE, UNIVERSE)}


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(settings.get_profile("vendor_fast"))
@given(data=st.data())
def test_a_rewritten_vendor_csv_loads_the_same_or_names_its_fault(name, data):
    fmt = FORMATS[name]
    check(fmt, data.draw(rewrites(fmt)))


def test_the_clean_files_load_whole():
    """The reference: each clean file loads every row (news: the outside ticker is quarantined)."""
    for fmt in FORMATS.values():
        res = clean_result(fmt, Rewrite())
        n = independent_records(render(fmt, Rewrite()), Rewrite(), len(fmt.header))
        if fmt.name == "universe":
            assert res.height == n == 4
        else:
            assert res.rows_in == n and res.quarantined == (1 if fmt.name == "news" else 0)


# ---------------------------------------------------------------------------------------- parquet
PARQUET_COLUMNS = ["ticker", "date", "open", "high", "low", "close", "adj_close", "volume"]


def _parquet_table() -> pa.Table:
    rows = [("AAPL", *r) for r in FNSPID_PRICE_ROWS] + [("NVDA", r[0], r[4], r[2], r[3], r[1], r[1], r[5]) for r in YF_ROWS]
    cols = list(zip(*rows))
    arrays = [pa.array(cols[0]), pa.array(cols[1])] + [pa.array([float(v) for v in c]) for c in cols[2:7]] + [pa.array([int(v) for v in cols[7]])]
    return pa.Table.from_arrays(arrays, names=PARQUET_COLUMNS)


@st.composite
def parquet_rewrites(draw) -> tuple[str, str, tuple]:
    op = draw(st.sampled_from(["none", "reorder", "duplicate", "rename", "missing", "extra", "index"]))
    return op, draw(st.sampled_from(PARQUET_COLUMNS)), tuple(draw(st.permutations(range(len(PARQUET_COLUMNS)))))


def _rewrite_parquet(op: str, column: str, order: tuple) -> pa.Table:
    t = _parquet_table()
    arrays, names = list(t.columns), list(t.column_names)
    j = names.index(column)
    if op == "reorder":
        arrays, names = [arrays[i] for i in order], [names[i] for i in order]
    elif op == "duplicate":
        arrays.insert(j + 1, arrays[j])
        names.insert(j + 1, column.upper() if j % 2 else column)  # 'close' and 'CLOSE' name one column too
    elif op == "rename":
        names[j] += "_x"
    elif op == "missing":
        del arrays[j], names[j]
    elif op == "extra":
        arrays.append(pa.array(["x"] * t.num_rows))
        names.append("Extra")
    elif op == "index":
        arrays.insert(0, pa.array(range(t.num_rows)))
        names.insert(0, "__index_level_0__")
    return pa.Table.from_arrays(arrays, names=names)


@settings(settings.get_profile("vendor_fast"))
@given(rw=parquet_rewrites())
def test_a_rewritten_price_parquet_loads_the_same_or_names_its_fault(rw):
    op, column, order = rw
    universe = {"AAPL", "NVDA"}
    with tempfile.TemporaryDirectory(prefix="finrag-vendor-") as tmp:
        clean, path = Path(tmp) / "clean" / "prices.parquet", Path(tmp) / "prices.parquet"
        clean.parent.mkdir()
        pq.write_table(_parquet_table(), clean)
        pq.write_table(_rewrite_parquet(op, column, order), path)
        want = load_prices([clean], universe).accepted
        causes = {"duplicate": "duplicate column", "rename": "missing column", "missing": "missing column"}
        try:
            res = load_prices([path], universe)
        except SourceError as exc:
            assert op in causes and causes[op] in str(exc), f"{rw}: {exc}"
            return
        assert op not in causes, f"{rw}: loaded"
        n = pq.read_table(path).num_rows  # an independent reader
        assert n == res.rows_in == res.accepted.height + res.quarantined
        assert res.accepted.equals(want), rw


# ---------------------------------------------------------------------------------------- deep run
@pytest.mark.slow
@settings(settings.get_profile("vendor_slow"))
@given(data=st.data())
def test_every_vendor_csv_rewrite_deep(data):
    """More examples over every CSV format at once (``make test``); not derandomized, so each run
    explores new files."""
    fmt = data.draw(st.sampled_from(list(FORMATS.values())))
    check(fmt, data.draw(rewrites(fmt)))


def test_a_rewrite_that_changes_nothing_is_the_clean_file():
    """The generator itself: the identity rewrite is byte for byte the clean file, and each rewrite
    changes what it says (so the invariant is not tested on clean files only)."""
    for fmt in FORMATS.values():
        clean = render(fmt, Rewrite())
        assert render(fmt, replace(Rewrite(), encoding="utf-8-sig")) == b"\xef\xbb\xbf" + clean
        crlf = render(fmt, replace(Rewrite(), line_end="\r\n"))
        assert crlf.count(b"\r\n") == clean.count(b"\n") - _inner_newlines(fmt)  # record ends only
        assert render(fmt, replace(Rewrite(), delimiter=";")) != clean


def _inner_newlines(fmt: Format) -> int:
    return sum(c.count("\n") for r in fmt.rows(True) for c in r)
