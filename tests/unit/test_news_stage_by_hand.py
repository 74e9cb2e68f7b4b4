"""The staged news read back (sources/news/stage.py) on two tiny files, every outcome worked out by
hand: which rows each range of decision days holds (across a month and a year end), their order,
the stage's span of days, the duplicate across files with its flag removed, and the one counted row
per file and ticker outside the universe. A date-only stamp (the default FNSPID clock) is decided
on the session after its day: 2020-12-30 on 12-31, 12-31 on 2021-01-04 (New Year's Day is a
holiday), 01-28 on 01-29, 01-29 on 02-01, 02-26 on 03-01."""

import datetime as dt
import json

import pytest

from finrag_dagster.sources.news import NewsClock, stage_news
from finrag_dagster.sources.news.columns import F_NAIVE_TIME, F_REPAIRED, F_TITLE_FROM_URL, R_DUPLICATE, R_NOT_UNIVERSE

HEADER = "Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"
D = dt.date


def _csv(path, rows):
    path.write_text(HEADER + "".join(f"{day} 00:00:00+00:00,{title},{ticker},{url},P,,body,,,,\n" for day, ticker, url, title in rows))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("stage_by_hand")
    b = _csv(
        d / "b.csv",
        [
            ("2021-01-28", "AAA", "https://x.com/acme-wins-deal", ""),  # b0: title from its URL (flagged)
            ("2020-12-30", "AAA", "u-b1", "B1"),  # b1
            ("2021-01-05", "ZZZ", "u-b2", "Z"),  # outside the universe
        ],
    )
    a = _csv(
        d / "a.csv",
        [
            ("2020-12-31", "AAA", "u-a0", "A0"),  # a0
            ("2021-01-28", "AAA", "https://x.com/acme-wins-deal", ""),  # a1: b0 again (b.csv is read first)
            ("2021-01-29", "AAA", "https://x.com/acme-opens-plant", ""),  # a2: title from its URL (flagged)
            ("2021-02-26", "AAA", "u-a3", "A3"),  # a3
            ("2021-01-28", "AAA", "u-a4c", "A4"),  # a4: public with b0 and read after it, first by news id
            ("2021-01-06", "ZZZ", "u-a5", "Z"),
            ("2021-01-07", "ZZZ", "u-a6", "Z"),
        ],
    )
    return d, b, a


@pytest.fixture(scope="module")
def staged(files):
    d, b, a = files
    return stage_news([b, a], {"AAA"}, NewsClock(), d / "stage")


DECIDED = {
    "https://x.com/acme-wins-deal": D(2021, 1, 29),
    "u-b1": D(2020, 12, 31),
    "u-a0": D(2021, 1, 4),
    "https://x.com/acme-opens-plant": D(2021, 2, 1),
    "u-a3": D(2021, 3, 1),
    "u-a4c": D(2021, 1, 29),
}


@pytest.mark.parametrize(
    "lo, hi",
    [
        (D(2020, 12, 31), D(2020, 12, 31)),
        (D(2020, 12, 31), D(2021, 1, 4)),  # across the year's end
        (D(2021, 1, 1), D(2021, 1, 29)),
        (D(2021, 1, 30), D(2021, 2, 28)),
        (D(2021, 2, 2), D(2021, 2, 28)),  # no row
        (D(2021, 1, 29), D(2021, 3, 1)),
        (D(2020, 12, 1), D(2021, 3, 31)),
    ],
)
def test_a_range_of_days_holds_exactly_the_rows_decided_in_it_in_public_time_then_id_order(staged, lo, hi):
    got = staged.accepted_between(lo, hi)
    assert sorted(got["url"].to_list()) == sorted(u for u, day in DECIDED.items() if lo <= day <= hi)
    assert dict(zip(got["url"], got["date"])) == {u: day for u, day in DECIDED.items() if lo <= day <= hi}
    rows = list(zip(got["public_time"].to_list(), got["news_id"].to_list()))
    assert rows == sorted(rows)


def test_the_tie_in_public_time_is_ordered_by_news_id(staged):
    got = staged.accepted_between(D(2021, 1, 29), D(2021, 1, 29))
    assert got.height == 2 and got["public_time"][0] == got["public_time"][1]
    assert got["news_id"].to_list() == sorted(got["news_id"].to_list())
    assert got["url"].to_list() == ["u-a4c", "https://x.com/acme-wins-deal"]  # not the order they were read in


def test_the_span_is_the_first_to_the_last_day_of_the_staged_months(staged, tmp_path):
    assert staged.date_span() == (D(2020, 12, 1), D(2021, 3, 31))
    december = stage_news([_csv(tmp_path / "dec.csv", [("2020-12-29", "AAA", "u", "T")])], {"AAA"}, NewsClock(), tmp_path / "s1")
    assert december.date_span() == (D(2020, 12, 1), D(2020, 12, 31))
    leap = stage_news([_csv(tmp_path / "feb.csv", [("2020-02-27", "AAA", "u", "T")])], {"AAA"}, NewsClock(), tmp_path / "s2")
    assert leap.date_span() == (D(2020, 2, 1), D(2020, 2, 29))  # decided on 02-28
    assert stage_news([_csv(tmp_path / "none.csv", [])], {"AAA"}, NewsClock(), tmp_path / "s3").date_span() is None


def test_everything_read_back_accounts_for_every_row(staged):
    res = staged.load_all()
    assert res.table == "news_raw" and res.rows_in == 10
    assert sorted(res.accepted["url"].to_list()) == sorted(DECIDED)
    q = res.quarantine
    assert q.select("source_file", "source_row", "reason", "rows").rows() == [
        ("a.csv", 1, R_DUPLICATE, 1),
        ("a.csv", 5, R_NOT_UNIVERSE, 2),
        ("b.csv", 2, R_NOT_UNIVERSE, 1),
    ]
    assert [json.loads(r) for r in q["raw"][1:]] == [
        {"Stock_symbol": "ZZZ", "first_row": 5, "rows": 2},
        {"Stock_symbol": "ZZZ", "first_row": 2, "rows": 1},
    ]
    assert json.loads(q["raw"][0])["Url"] == "https://x.com/acme-wins-deal"
    assert res.flags.select("source_file", "source_row", "ticker", "date", "flag").rows() == [
        ("a.csv", 2, "AAA", D(2021, 2, 1), F_TITLE_FROM_URL),  # the duplicate a1's flag went with it
        ("b.csv", 0, "AAA", D(2021, 1, 29), F_TITLE_FROM_URL),
    ]
    assert staged.accepted_count() == 6


def test_duplicates_follow_the_file_order_not_the_row_numbers_and_need_ticker_url_and_time(tmp_path):
    """b.csv is read first, so its copy (row 2) stands and a.csv's (row 0) is the duplicate; the same
    URL and time under another ticker, or the same ticker and URL at another time, is no duplicate."""
    b = _csv(
        tmp_path / "b.csv",
        [
            ("2021-01-05", "AAA", "u-x", "X"),
            ("2021-01-05", "BBB", "u-y", "Y"),
            ("2021-01-06", "AAA", "u-dup", "D"),
        ],
    )
    a = _csv(
        tmp_path / "a.csv",
        [
            ("2021-01-06", "AAA", "u-dup", "D"),  # b's row 2 again: the duplicate
            ("2021-01-05", "BBB", "u-x", "X"),  # u-x at the same time under another ticker
            ("2021-01-07", "BBB", "u-y", "Y"),  # u-y of the same ticker a day later
        ],
    )
    res = stage_news([b, a], {"AAA", "BBB"}, NewsClock(), tmp_path / "stage").load_all()
    assert res.quarantine.select("source_file", "source_row", "reason").rows() == [("a.csv", 0, R_DUPLICATE)]
    assert sorted(res.accepted.select("source_file", "source_row").rows()) == [("a.csv", 1), ("a.csv", 2), ("b.csv", 0), ("b.csv", 1), ("b.csv", 2)]


def test_quarantine_and_flags_are_in_file_and_row_order(tmp_path):
    """Within a file the rows outside the universe (row 0), the duplicate (row 2) and the flags of
    each kind (a repaired row 3 before a title read from its URL in row 1) come out by row; a row with
    two flags has them by name. The clock is trusted, so a stamp without an offset is flagged too."""
    first = _csv(tmp_path / "first.csv", [("2021-01-06", "AAA", "u-dup", "D")])
    rows = [
        b"2021-01-05 00:00:00+00:00,Z,ZZZ,u-z,P,,body,,,,\n",
        b"2021-01-05 00:00:00+00:00,,AAA,https://x.com/acme-wins,P,,body,,,,\n",
        b"2021-01-06 00:00:00+00:00,D,AAA,u-dup,P,,body,,,,\n",
        b"2021-01-05 10:00:00,,AAA,https://x.com/caf-opens,P,,caf\xe9,,,,\n",
    ]
    second = tmp_path / "second.csv"
    second.write_bytes(HEADER.encode() + b"".join(rows))
    res = stage_news([first, second], {"AAA"}, NewsClock(dates_only=False), tmp_path / "stage").load_all()
    assert res.quarantine.select("source_file", "source_row", "reason").rows() == [("second.csv", 0, R_NOT_UNIVERSE), ("second.csv", 2, R_DUPLICATE)]
    assert res.flags.select("source_file", "source_row", "flag").rows() == [
        ("second.csv", 1, F_TITLE_FROM_URL),
        ("second.csv", 3, F_NAIVE_TIME),
        ("second.csv", 3, F_REPAIRED),
        ("second.csv", 3, F_TITLE_FROM_URL),
    ]


def test_a_stage_without_duplicates_or_without_rows(tmp_path):
    one = stage_news([_csv(tmp_path / "one.csv", [("2021-01-05", "AAA", "u", "T")])], {"AAA"}, NewsClock(), tmp_path / "s1")
    res = one.load_all()
    assert res.accepted["url"].to_list() == ["u"] and res.quarantine.height == 0 and res.flags.height == 0 and one.accepted_count() == 1
    empty = stage_news([_csv(tmp_path / "none.csv", [])], {"AAA"}, NewsClock(), tmp_path / "s2").load_all()
    assert empty.rows_in == 0 and empty.accepted.height == 0 and empty.accepted.columns == res.accepted.columns
