"""The CSV checks read files in bounded chunks: the answers do not depend on where a chunk ends
(a NUL byte, a multi-byte character or a quoted newline split across chunks)."""

import gzip

import pytest

from finrag_dagster.sources import csvcheck
from finrag_dagster.sources.csvcheck import csv_problem, is_utf8
from finrag_dagster.sources.rowcount import file_rows

HEADER = "Date,Article_title,Stock_symbol,Url\n"
GOOD = HEADER + "".join(f'2021-03-0{i} 00:00:00 UTC,"Café ünïcode, line\nbreak {i}",AAPL,https://example.com/{i}\n' for i in range(1, 8))


@pytest.fixture(params=[3, 7, 64, 1 << 24])
def chunk(request, monkeypatch):
    monkeypatch.setattr(csvcheck, "CHUNK_BYTES", request.param)
    return request.param


def test_a_good_file_is_good_whatever_the_chunk(tmp_path, chunk):
    p = tmp_path / "news.csv"
    p.write_text(GOOD, encoding="utf-8")
    assert csv_problem(p) is None and is_utf8(p)
    assert file_rows(p) == 7
    gz = tmp_path / "news.csv.gz"
    gz.write_bytes(gzip.compress(GOOD.encode()))
    assert file_rows(gz) == 7


def test_a_nul_byte_is_found_on_its_line_across_chunks(tmp_path, chunk):
    p = tmp_path / "news.csv"
    lines = GOOD.encode().split(b"\n")
    lines[9] = lines[9][:5] + b"\x00" + lines[9][5:]  # line 10 of the file
    p.write_bytes(b"\n".join(lines))
    assert csv_problem(p) == "line 10: NUL byte (a binary or corrupt file)"


def test_an_unterminated_quote_is_reported_where_its_record_starts(tmp_path, chunk):
    p = tmp_path / "news.csv"
    p.write_text(GOOD + '2021-03-09 00:00:00 UTC,"never closed,AAPL,https://example.com/9\n', encoding="utf-8")
    assert csv_problem(p) == "line 16: a quoted field is never closed (unterminated quote)"


def test_invalid_utf8_is_found_and_a_split_character_is_not_mistaken_for_it(tmp_path, chunk):
    good = tmp_path / "good.csv"
    good.write_bytes(("x" * 2 + "é" * 50).encode())  # two-byte characters straddle every odd chunk end
    assert is_utf8(good)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(GOOD.encode() + b"2021-03-09,caf\xe9,AAPL,u\n")  # Latin-1 byte
    assert not is_utf8(bad) and csv_problem(bad) is None  # readable: the loader repairs it and flags the rows
