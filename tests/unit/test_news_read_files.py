"""Reading one news file (sources/news/read.py: news_source, read_news_file) on tiny files written
here, each outcome worked out by hand: the column map, the strings exactly as written, the repair
flag, and every refusal with its whole message (docs/bad_inputs.md, "News (FNSPID)")."""

import datetime as dt
import gzip

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.news import news_source, read_news_file
from finrag_dagster.sources.news.read import _cols

HEADER = "Date,Stock_symbol,Url,Article_title\n"


def write(tmp_path, name: str, data: str | bytes):
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def refusal(path, reader=news_source) -> str:
    with pytest.raises(SourceError) as err:
        reader(path)
    return str(err.value)


def test_a_csv_keeps_every_field_as_written_and_maps_names_whatever_their_case_and_spaces(tmp_path):
    p = write(
        tmp_path,
        "NEWS.CSV",  # the extension in capitals is still a CSV
        " date ,STOCK_SYMBOL,url,Article_Title,Date_Has_Time,title_from_url_slug,Extra\n"
        '2021-03-01 14:05:00-05:00,0050,https://x/1,"a, b",true,false,007\n'
        "2021-03-02,1e5,https://x/2,,false,,\n",
    )
    lf, cols, repaired = news_source(p)
    assert cols == {
        "Date": " date ",
        "Article_title": "Article_Title",
        "Stock_symbol": "STOCK_SYMBOL",
        "Url": "url",
        "date_has_time": "Date_Has_Time",
        "title_from_url_slug": "title_from_url_slug",
    }
    assert repaired is False
    got = lf.collect()
    assert got.schema == pl.Schema({c: pl.Utf8 for c in got.columns})  # nothing inferred: "0050" stays a ticker
    assert got.rows() == [
        ("2021-03-01 14:05:00-05:00", "0050", "https://x/1", "a, b", "true", "false", "007"),
        ("2021-03-02", "1e5", "https://x/2", None, "false", None, None),
    ]


def test_read_news_file_gives_the_normalised_rows_of_a_csv(tmp_path):
    p = write(tmp_path, "n.csv", HEADER + "2021-03-01 14:05:00-05:00,0050,https://x/1, T \n2021-03-02,AAA,https://x/2,\n")
    got = read_news_file(p)
    ny = dt.timezone(dt.timedelta(hours=-5))
    assert got["ts_ns"].to_list() == [
        int(dt.datetime(2021, 3, 1, 14, 5, tzinfo=ny).timestamp()) * 10**9,
        int(dt.datetime(2021, 3, 2, tzinfo=dt.timezone.utc).timestamp()) * 10**9,
    ]
    assert got["Stock_symbol"].to_list() == ["0050", "AAA"] and got["Article_title"].to_list() == ["T", ""]
    assert got["source_file"].to_list() == ["n.csv"] * 2 and got["source_row"].to_list() == [0, 1]
    assert got["has_time"].to_list() == [None, None] and got["repaired"].to_list() == [False, False]


def test_a_csv_that_is_not_utf8_is_read_with_replacement_characters_and_flagged(tmp_path):
    p = write(tmp_path, "n.csv", (HEADER + "2021-03-01,AAA,https://x/1,caf\xe9\n2021-03-02,AAA,https://x/2,plain\n").encode("latin-1"))
    lf, _, repaired = news_source(p)
    assert repaired is True
    assert lf.collect()["Article_title"].to_list() == ["caf\ufffd", "plain"]
    assert read_news_file(p)["repaired"].to_list() == [True, False]


def test_a_record_with_more_fields_than_the_header_is_read_as_far_as_the_header_goes(tmp_path):
    p = write(tmp_path, "n.csv", HEADER + "2021-03-01,AAA,https://x/1,T,surplus\n2021-03-02,BBB,https://x/2,U\n")
    lf, _, _ = news_source(p)
    assert lf.collect().rows() == [("2021-03-01", "AAA", "https://x/1", "T"), ("2021-03-02", "BBB", "https://x/2", "U")]


def test_a_parquet_is_scanned_with_its_own_types_and_never_flagged_as_repaired(tmp_path):
    p = tmp_path / "N.PARQUET"
    pl.DataFrame({"DATE": [dt.date(2021, 3, 1)], "stock_symbol": ["AAA"], "Url": ["u"]}).write_parquet(p)
    lf, cols, repaired = news_source(p)
    assert cols == {"Date": "DATE", "Stock_symbol": "stock_symbol", "Url": "Url"} and repaired is False
    assert lf.collect().rows() == [(dt.date(2021, 3, 1), "AAA", "u")]
    got = read_news_file(p)
    assert got["wall_day"].to_list() == [dt.date(2021, 3, 1)] and got["source_file"].to_list() == ["N.PARQUET"]


def test_every_refusal_of_a_csv_names_its_cause(tmp_path):
    for reader in (news_source, read_news_file):
        gz = write(tmp_path, "g.csv", gzip.compress((HEADER + "2021-03-01,AAA,u,T\n").encode()))
        assert (
            refusal(gz, reader) == "g.csv: gzip-compressed data in a file named .csv: rename it to g.csv.gz (read as compressed CSV) or decompress it"
        )
        u16 = write(tmp_path, "w.csv", (HEADER + "2021-03-01,AAA,u,T\n").encode("utf-16"))
        assert refusal(u16, reader) == (
            "w.csv: the file is UTF-16 text (little-endian: it starts with the byte-order mark FF FE), not UTF-8: re-save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)"
        )
        quote = write(tmp_path, "q.csv", HEADER + '2021-03-01,AAA,u,T\n2021-03-02,AAA,u,"never closed\n')
        assert (
            refusal(quote, reader)
            == "q.csv: not a well-formed CSV: the record starting at line 3: a quoted field is never closed (unterminated quote)"
        )
        dup = write(tmp_path, "d.csv", "Date,Stock_symbol,Url, DATE \n2021-03-01,AAA,u,x\n")
        assert refusal(dup, reader) == "d.csv: duplicate column 'DATE' (columns 1 and 4): the file is ambiguous; rename or remove one"
        other = write(tmp_path, "x.txt", HEADER)
        assert refusal(other, reader) == "x.txt: unknown news file format (expected .csv, .csv.gz or .parquet)"


def test_classic_mac_line_ends_are_refused_before_the_file_is_read_whole(tmp_path):
    p = write(tmp_path, "MAC.CSV", HEADER.replace("\n", "\r") + "2021-03-01,AAA,u,T\r2021-03-02,AAA,u,U\r")
    assert refusal(p, read_news_file) == (
        "MAC.CSV: line 1: CR line ends (classic Mac: a CR without LF outside quotes, at byte 35), which readers split "
        "into records differently: re-save the file with LF or CRLF line ends"
    )


def test_parquet_refusals_name_their_cause(tmp_path):
    dup = tmp_path / "d.parquet"
    pq.write_table(pa.table({"Date": ["2021-03-01"], "Stock_symbol": ["AAA"], "date": ["2021-03-02"], "Url": ["u"]}), dup)
    assert refusal(dup) == "d.parquet: duplicate column 'date' (columns 1 and 3): the file is ambiguous; rename or remove one"
    junk = write(tmp_path, "j.parquet", b"PAR1 not a parquet file")
    with pytest.raises(Exception) as direct:
        pq.read_schema(junk)
    assert refusal(junk) == f"j.parquet: cannot be read as parquet ({str(direct.value).splitlines()[0]})"


def test_a_parquet_whose_data_is_damaged_behind_an_intact_footer_is_refused_when_read(tmp_path):
    p = tmp_path / "n.parquet"
    pq.write_table(
        pa.table({"Date": ["2021-03-01"] * 200, "Stock_symbol": ["AAA"] * 200, "Url": [f"https://x/{i}" for i in range(200)]}), p, compression="none"
    )
    raw = bytearray(p.read_bytes())
    raw[4:400] = b"\xff" * 396  # the first data pages; the footer (schema) at the end is left whole
    p.write_bytes(bytes(raw))
    news_source(p)  # the schema still reads
    with pytest.raises(Exception) as direct:
        pl.scan_parquet(p).collect()
    assert refusal(p, read_news_file) == f"n.parquet: cannot be read ({str(direct.value).splitlines()[0]})"


def test_missing_columns_are_named_with_the_first_fifteen_the_file_has():
    def missing(columns):
        with pytest.raises(SourceError) as err:
            _cols(columns, "f.csv")
        return str(err.value)

    assert missing(["Stock_symbol", "Url"]) == (
        "f.csv: not an FNSPID news file: missing column Date (needs Date, Stock_symbol and Article_title or Url; has ['Stock_symbol', 'Url'])"
    )
    assert missing(["date", "Article_title"]).startswith("f.csv: not an FNSPID news file: missing column Stock_symbol (")
    assert missing(["Date", "Stock_symbol", "Article"]).startswith("f.csv: not an FNSPID news file: missing column Article_title or Url (")
    many = [f"c{i}" for i in range(20)]
    assert missing(many) == (
        "f.csv: not an FNSPID news file: missing column Date, Stock_symbol, Article_title or Url "
        f"(needs Date, Stock_symbol and Article_title or Url; has {many[:15]})"
    )
    assert _cols(["Date", "Stock_symbol", "Article_title"], "f.csv") == {c: c for c in ("Date", "Article_title", "Stock_symbol")}


def test_news_source_names_the_file_whose_columns_are_missing(tmp_path):
    p = write(tmp_path, "n.csv", "when,ticker,link\n2021-03-01,AAA,u\n")
    assert refusal(p) == (
        "n.csv: not an FNSPID news file: missing column Date, Stock_symbol, Article_title or Url "
        "(needs Date, Stock_symbol and Article_title or Url; has ['when', 'ticker', 'link'])"
    )


def test_a_header_that_is_not_utf8_is_read_with_replacement_characters(tmp_path):
    p = write(tmp_path, "n.csv", "Date,Stock_symbol,Url,R\xe9sum\xe9\n2021-03-01,AAA,u,x\n".encode("latin-1"))
    lf, cols, repaired = news_source(p)
    assert repaired is True and cols == {"Date": "Date", "Stock_symbol": "Stock_symbol", "Url": "Url"}
    assert lf.collect().rows() == [("2021-03-01", "AAA", "u", "x")] and lf.collect_schema().names()[3] == "R\ufffdsum\ufffd"


def test_a_folder_named_like_a_csv_is_refused_with_the_system_s_reason(tmp_path):
    d = tmp_path / "n.csv"
    d.mkdir()
    assert refusal(d) == f"n.csv: cannot be read as CSV ([Errno 21] Is a directory: '{d}')"


def test_gzip_bytes_are_named_before_they_are_mistaken_for_another_delimiter_or_cr_line_ends(tmp_path):
    """Compressed bytes read as text look like a tab-separated file or one with CR line ends: the
    gzip check comes first in both readers."""
    for n in (5, 50):
        text = HEADER + "".join(f"2021-03-01,AAA,https://x/{i},title {i * 7919 % 1000}\n" for i in range(n))
        p = write(tmp_path, "g.csv", gzip.compress(text.encode(), mtime=0))
        for reader in (news_source, read_news_file):
            assert refusal(p, reader).startswith("g.csv: gzip-compressed data in a file named .csv")


def test_a_csv_s_yes_no_columns_are_read_as_booleans_and_anything_else_is_refused(tmp_path):
    p = write(
        tmp_path,
        "n.csv",
        "Date,Stock_symbol,Url,date_has_time,title_from_url_slug\n"
        "2021-03-01,AAA,u1,TRUE,t\n2021-03-01,AAA,u2, f ,0\n2021-03-01,AAA,u3,,yes\n2021-03-01,AAA,u4,1,No\n2021-03-01,AAA,u5,  ,f\n",
    )
    got = read_news_file(p)
    assert got["has_time"].to_list() == [True, False, None, True, None]  # empty or blank: unknown
    assert got["slug_title"].to_list() == [True, False, True, False, False]
    numbers = tmp_path / "n.parquet"
    pl.DataFrame({"Date": ["2021-03-01"] * 2, "Stock_symbol": ["AAA"] * 2, "Url": ["u1", "u2"], "date_has_time": [1, 0]}).write_parquet(numbers)
    assert read_news_file(numbers)["has_time"].to_list() == [True, False]
    bad = write(tmp_path, "b.csv", "Date,Stock_symbol,Url,date_has_time\n2021-03-01,AAA,u1,true\n2021-03-01,AAA,u2,maybe\n2021-03-01,AAA,u3,2\n")
    assert refusal(bad, read_news_file) == "b.csv: column date_has_time: 'maybe' is not true or false (2 such rows)"
