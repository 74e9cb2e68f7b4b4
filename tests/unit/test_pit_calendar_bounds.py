"""The decision range the sensors hand the decision job lies inside calendar.decision_start ..
calendar.end, on the exact sessions (docs/method.md §1, README's sensors).

The ingest job covers history from calendar.start; the decision job covers only the decision days
of that run from the first decision session to the last session of the calendar. A run of the days
around either end is clipped to the boundary session itself: never a history day before the first
decision day, never a session after calendar.end.
"""

import datetime as dt

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.defs import sensors

cal = nyse()
RS, RE = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def _bounds(s: Settings) -> tuple[str, str]:
    days = cal.sessions_in_range(s.calendar.decision_start, s.calendar.end)
    return days[0].isoformat(), days[-1].isoformat()


def test_the_decision_range_is_clipped_to_the_first_and_last_decision_session():
    # decision_start on a Saturday: the first decision session is Monday 4 Feb 2019; calendar.end Friday 28 June 2019
    s = Settings(calendar={"start": dt.date(2018, 1, 2), "end": dt.date(2019, 6, 28), "decision_start": dt.date(2019, 2, 2)})
    first, last = _bounds(s)
    assert (first, last) == ("2019-02-04", "2019-06-28")
    for day, want in {
        "2019-02-01": None,  # the session before the first decision day: history only
        "2019-02-04": ("2019-02-04", "2019-02-04"),
        "2019-06-28": ("2019-06-28", "2019-06-28"),
        "2019-07-01": None,  # the session after calendar.end
    }.items():
        assert sensors.decision_range({}, day, first, last) == want, day
    assert sensors.decision_range({RS: "2019-01-30", RE: "2019-02-05"}, None, first, last) == ("2019-02-04", "2019-02-05")
    assert sensors.decision_range({RS: "2019-06-26", RE: "2019-07-02"}, None, first, last) == ("2019-06-26", "2019-06-28")
    assert sensors.decision_range({RS: "2019-01-30", RE: "2019-07-02"}, None, first, last) == (first, last)
