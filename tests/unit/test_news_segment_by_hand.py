"""A source's minute precision across appends (sources/news/segment.py), worked out by hand: the
merged counts per publisher, when an append keeps the staged rows and when the file is read again,
and where an appended record that cannot be read is quarantined. Every clock is trusted here, so
a publisher whose timed stamps all fall on the minute is minute-precise (public at the end of the
minute) until one stamp with seconds makes the whole source second-precise."""

import pytest

from finrag_dagster.sources.news import NewsClock, load_news, stage_news
from finrag_dagster.sources.news.columns import R_RAGGED
from finrag_dagster.sources.news.segment import _merge_minute

HEADER = "Date,Article_title,Stock_symbol,Url,Publisher,date_has_time\n"
CLOCK = NewsClock(dates_only=False)


def row(day: int, clock: str, url: str, has_time: str = "true") -> str:
    return f"2021-03-{day:02d} {clock}+00:00,T,AAA,{url},P,{has_time}\n"


def test_merged_counts_add_up_per_publisher():
    assert _merge_minute([["P", 3, 3], ["Q", 1, 0]], [["R", 2, 2], ["P", 5, 2]]) == [["P", 8, 5], ["Q", 1, 0], ["R", 2, 2]]
    assert _merge_minute([], [["P", 2, 1]]) == [["P", 2, 1]]


def staged_then_appended(tmp_path, first: list[str], more: list[str]):
    f = tmp_path / "n.csv"
    f.write_text(HEADER + "".join(first))
    stage_news([f], {"AAA"}, CLOCK, tmp_path / "stage")
    with open(f, "a") as fh:
        fh.write("".join(more))
    after = stage_news([f], {"AAA"}, CLOCK, tmp_path / "stage")
    res = after.load_all()
    fresh = load_news(f, {"AAA"}, clock=CLOCK)
    assert res.accepted.equals(fresh.accepted) and res.quarantine.equals(fresh.quarantine)
    return after, res


MINUTE = [row(1, "14:30:00", "a"), row(2, "15:00:00", "b"), row(3, "15:30:00", "c")]


@pytest.mark.parametrize(
    "first, more, action, read, precision",
    [
        # 3 on the minute + 2 on the minute: still minute-precise, only the 2 new rows read
        (MINUTE, [row(4, "10:00:00", "d"), row(5, "11:00:00", "e")], "appended", 2, {"minute"}),
        # 3 on the minute + 5 of which 3 have seconds: 8 timed, 5 on the minute, read again
        (
            MINUTE,
            [row(4, "10:00:00", "d"), row(5, "11:00:00", "e"), row(8, "10:00:01", "f"), row(9, "10:00:02", "g"), row(10, "10:00:03", "h")],
            "read",
            8,
            {"second"},
        ),
        # already second-precise (one stamp with seconds) + 2 on the minute: stays so, nothing re-read
        (
            [row(1, "14:30:00", "a"), row(2, "14:30:07", "b"), row(3, "15:00:00", "c")],
            [row(4, "10:00:00", "d"), row(5, "11:00:00", "e")],
            "appended",
            2,
            {"second"},
        ),
    ],
)
def test_an_append_is_kept_unless_it_changes_the_publisher_s_precision(tmp_path, first, more, action, read, precision):
    after, res = staged_then_appended(tmp_path, first, more)
    assert after.actions == {"n.csv": action} and after.rows_read == read
    assert set(res.accepted["time_precision"]) == precision


def test_a_row_whose_stamp_is_a_date_does_not_count_for_the_minute(tmp_path):
    """date_has_time = false: 14:30:07 is no time of day, so the source stays minute-precise."""
    after, res = staged_then_appended(tmp_path, MINUTE, [row(4, "14:30:07", "d", has_time="false")])
    assert after.actions == {"n.csv": "appended"} and after.rows_read == 1
    assert dict(zip(res.accepted["url"], res.accepted["time_precision"])) == {"a": "minute", "b": "minute", "c": "minute", "d": "date"}


def test_an_appended_record_that_cannot_be_read_is_quarantined_at_its_row_and_does_not_count(tmp_path):
    """Data rows 0-2 staged; the append's second record (data row 4) has a field too many and a
    stamp with seconds: quarantined there, it leaves the source minute-precise."""
    ragged = "2021-03-06 14:30:07+00:00,T,AAA,x,P,true,EXTRA\n"
    after, res = staged_then_appended(tmp_path, MINUTE, [row(4, "10:00:00", "d"), ragged])
    assert after.actions == {"n.csv": "appended"} and after.rows_read == 2
    assert res.quarantine.select("source_file", "source_row", "reason").rows() == [("n.csv", 4, f"{R_RAGGED}: 7 fields where the header has 6")]
    assert set(res.accepted["time_precision"]) == {"minute"} and res.accepted.height == 4
