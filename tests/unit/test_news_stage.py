"""The streaming, incremental news loader: batches do not change the rows, a re-run reads only
what is new, rows of other tickers are counted (not dropped), and a crash leaves the last stage."""

import datetime as dt
import os

import polars as pl
import pytest

from finrag_dagster.sources import news
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.news import NewsClock, load, load_news, segment, stage, stage_news

UNIVERSE = {"AAA", "BBB"}
HEADER = b"Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"


def _row(day: int, ticker: str, url: str, stamp: str = "00:00:00", title: str = "T", body: str = "B") -> bytes:
    d = dt.date(2021, 3, 1) + dt.timedelta(days=day)
    return f'{d} {stamp}+00:00,{title},{ticker},{url},P,,"{body}",,,,\n'.encode()


def _rows(n: int, start: int = 0, tickers=("AAA", "BBB", "ZZZ", "YYY")) -> bytes:
    """n rows over ~2 months; every fourth row a multi-line body with quotes and commas."""
    out = []
    for i in range(start, start + n):
        body = 'line one\nsaid ""hi"", then left' if i % 4 == 0 else "plain"
        out.append(_row(i % 60, tickers[i % len(tickers)], f"u{i}", title=f"Title {i}", body=body))
    return b"".join(out)


def _same(a, b) -> None:
    assert a.rows_in == b.rows_in
    assert a.accepted.equals(b.accepted)
    assert a.quarantine.equals(b.quarantine)
    assert a.flags.equals(b.flags)


def test_small_batches_give_the_same_rows_as_one_batch(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(400) + _row(0, "AAA", "u0", title="Another title") + _row(2, "", "u-x") + b"bad-date,T,AAA,u-y,P,,B,,,,\n")
    one = stage_news([f], UNIVERSE, NewsClock(), tmp_path / "one").load_all()
    many_stage = stage_news([f], UNIVERSE, NewsClock(), tmp_path / "many", batch_bytes=1)  # 16 rows a batch
    many = many_stage.load_all()
    _same(one, many)
    assert one.accepted.height == 200 and one.rows_in == 403
    reasons = dict(one.quarantine.group_by("reason").agg(pl.col("rows").sum()).iter_rows())
    assert reasons == {news.R_NOT_UNIVERSE: 200, news.R_NO_TICKER: 1, news.R_BAD_DATE: 1, news.R_DUPLICATE: 1}
    # several month files were written by many batches, and read back in one piece
    assert len(many_stage.files[0].month_files()) == 2


def test_rows_outside_the_universe_are_one_counted_row_per_file_and_ticker(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(40))
    q = load_news(f, UNIVERSE).quarantine
    summary = q.filter(pl.col("reason") == news.R_NOT_UNIVERSE).sort("source_row")
    assert summary.select("source_row", "rows").rows() == [(2, 10), (3, 10)]  # ZZZ first at row 2, YYY at row 3
    assert '"Stock_symbol": "ZZZ"' in summary["raw"][0]


def test_a_rerun_reads_nothing_and_an_append_reads_only_the_new_rows(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(120))
    root = tmp_path / "stage"
    first = stage_news([f], UNIVERSE, NewsClock(), root)
    assert first.rows_read == 120 and first.actions == {"n.csv": "read"}
    again = stage_news([f], UNIVERSE, NewsClock(), root)
    assert again.rows_read == 0 and again.actions == {"n.csv": "unchanged"}
    _same(first.load_all(), again.load_all())

    with open(f, "ab") as fh:  # 30 new rows, one repeating an old row's (ticker, url, time)
        fh.write(_rows(29, start=120) + _row(0, "AAA", "u0", title="Title 0"))
    grown = stage_news([f], UNIVERSE, NewsClock(), root)
    assert grown.rows_read == 30 and grown.actions == {"n.csv": "appended"}
    fresh = stage_news([f], UNIVERSE, NewsClock(), tmp_path / "fresh")
    assert fresh.rows_read == 150
    _same(grown.load_all(), fresh.load_all())
    assert (news.R_DUPLICATE, 150 - 1) in grown.load_all().quarantine.select("reason", "source_row").rows()

    # a change inside the old bytes (not an append) reads the whole file again
    data = f.read_bytes().replace(b"Title 5,", b"Title 7,", 1)
    f.write_bytes(data)
    changed = stage_news([f], UNIVERSE, NewsClock(), root)
    assert changed.actions == {"n.csv": "read"} and changed.rows_read == 150
    _same(changed.load_all(), stage_news([f], UNIVERSE, NewsClock(), tmp_path / "fresh2").load_all())


def test_a_new_universe_or_clock_reads_the_file_again(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(40))
    root = tmp_path / "stage"
    stage_news([f], UNIVERSE, NewsClock(), root)
    wider = stage_news([f], UNIVERSE | {"ZZZ"}, NewsClock(), root)
    assert wider.rows_read == 40 and wider.load_all().accepted.height == 30
    trusted = stage_news([f], UNIVERSE | {"ZZZ"}, NewsClock(dates_only=False), root)
    assert trusted.rows_read == 40


def test_an_append_that_changes_a_sources_minute_precision_rereads_the_file(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _row(1, "AAA", "a", "14:30:00") + _row(2, "AAA", "b", "15:00:00"))
    root = tmp_path / "stage"
    clock = NewsClock(dates_only=False)
    before = stage_news([f], UNIVERSE, clock, root).load_all().accepted
    assert set(before["time_precision"]) == {"minute"}
    with open(f, "ab") as fh:
        fh.write(_row(3, "AAA", "c", "15:00:07"))  # the publisher's clock has seconds after all
    after = stage_news([f], UNIVERSE, clock, root)
    assert after.actions == {"n.csv": "read"}
    assert set(after.load_all().accepted["time_precision"]) == {"second"}
    _same(after.load_all(), load_news(f, UNIVERSE, clock=clock))


def test_a_crash_while_staging_an_append_leaves_the_previous_stage(tmp_path, monkeypatch):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(40))
    root = tmp_path / "stage"
    before = stage_news([f], UNIVERSE, NewsClock(), root).load_all()
    with open(f, "ab") as fh:
        fh.write(_rows(10, start=40))
    check = segment.check_news_rows

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(segment, "check_news_rows", boom)  # the name _checked_batch calls
    with pytest.raises(RuntimeError, match="disk full"):
        stage_news([f], UNIVERSE, NewsClock(), root)
    (d,) = [p for p in root.iterdir()]
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []  # no half-written segment left
    st = stage.NewsStage([stage.FileStage(f, d, load._read_manifest(d))], before.rows_in)
    _same(st.load_all(), before)
    monkeypatch.setattr(segment, "check_news_rows", check)
    healed = stage_news([f], UNIVERSE, NewsClock(), root)
    assert healed.actions == {"n.csv": "appended"} and healed.rows_read == 10


def test_a_malformed_append_names_the_file_and_where_the_new_rows_start(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(8))
    root = tmp_path / "stage"
    stage_news([f], UNIVERSE, NewsClock(), root)
    with open(f, "ab") as fh:
        fh.write(b'2021-03-09 00:00:00+00:00,"never closed,AAA,u,P,,B,,,,\n')
    with pytest.raises(SourceError, match=r"n\.csv \(rows appended after data row 8\).*line 2"):
        stage_news([f], UNIVERSE, NewsClock(), root)


def test_parquet_sources_stream_too(tmp_path):
    f = tmp_path / "n.csv"
    f.write_bytes(HEADER + _rows(60))
    pq_file = tmp_path / "n.parquet"
    pl.read_csv(f, infer_schema=False).write_parquet(pq_file)
    a = load_news(f, UNIVERSE)
    b = load_news(pq_file, UNIVERSE)
    assert a.accepted.drop("source_file").equals(b.accepted.drop("source_file"))
    assert a.quarantine.drop("source_file").equals(b.quarantine.drop("source_file"))
    os.utime(pq_file, ns=(1, 1))  # a parquet file cannot grow by appending: any change reads it again
    root = tmp_path / "stage"
    stage_news([pq_file], UNIVERSE, NewsClock(), root)
    os.utime(pq_file, ns=(2, 2))
    assert stage_news([pq_file], UNIVERSE, NewsClock(), root).actions == {"n.parquet": "read"}


def test_a_file_no_longer_configured_leaves_no_staged_rows(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_bytes(HEADER + _rows(40))
    b.write_bytes(HEADER + _rows(20, start=40))
    root = tmp_path / "stage"
    both = stage_news([a, b], UNIVERSE, NewsClock(), root)
    assert both.pruned == 0 and len([d for d in root.iterdir() if d.is_dir()]) == 2
    only_a = stage_news([a], UNIVERSE, NewsClock(), root)
    assert only_a.pruned == 1 and only_a.actions == {"a.csv": "unchanged"}
    assert [d.name for d in root.iterdir() if d.is_dir()] == [load._file_dir(root, a).name]
    _same(only_a.load_all(), stage_news([a], UNIVERSE, NewsClock(), tmp_path / "fresh").load_all())


def test_a_gzipped_csv_streams_to_the_same_rows_as_the_plain_file(tmp_path):
    import gzip

    data = HEADER + _rows(90)
    plain, packed = tmp_path / "n.csv", tmp_path / "z" / "n.csv.gz"
    packed.parent.mkdir()
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    a = stage_news([plain], UNIVERSE, NewsClock(), tmp_path / "s1").load_all()
    b = stage_news([packed], UNIVERSE, NewsClock(), tmp_path / "s2")
    assert b.rows_read == 90 and not list((tmp_path / "s2").rglob("*.csv"))  # the decompressed copy is gone
    b = b.load_all()
    assert a.rows_in == b.rows_in and a.accepted.drop("source_file").equals(b.accepted.drop("source_file"))
    assert set(b.accepted["source_file"].unique()) == {"n.csv.gz"}
    assert a.quarantine.drop("source_file").equals(b.quarantine.drop("source_file"))

    broken = tmp_path / "bad.csv.gz"
    broken.write_bytes(gzip.compress(data)[:200])
    with pytest.raises(SourceError, match=r"bad\.csv\.gz"):
        stage_news([broken], UNIVERSE, NewsClock(), tmp_path / "s3")
