"""The prior experience tree is induced from pre-evaluation data only (SPEC §9, seed 002 §4).

Its induction day is the last session of the train split inside the calendar, and the anchors it
is induced from are train-split sessions strictly before the day asked — never a validation or
test session, whatever day is asked.
"""

import datetime as dt

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.assets.experience import induction_day, train_days_before

cal = nyse()
SPLITS = {"train": (dt.date(2019, 1, 1), dt.date(2019, 1, 31)), "validation": (dt.date(2019, 2, 1), dt.date(2019, 2, 28)),
          "test": (dt.date(2019, 3, 1), dt.date(2019, 6, 28))}


def test_tree_is_induced_on_the_last_train_session_from_train_days_only():
    s = Settings(splits=SPLITS, calendar={"start": dt.date(2017, 11, 1), "end": dt.date(2019, 6, 28), "decision_start": dt.date(2019, 2, 1)})
    assert induction_day(s, cal) == "2019-01-31"
    train = [d.isoformat() for d in cal.sessions_in_range(*SPLITS["train"])]
    assert train_days_before(s, cal, "2019-01-31") == train[:-1]
    for day in ("2019-02-15", "2019-03-01", "2019-06-28"):  # asked on an evaluated day: still train sessions only
        assert train_days_before(s, cal, day) == train
    # a calendar ending inside the train split: the last train session inside it
    short = s.with_overrides(calendar={"end": dt.date(2019, 1, 18)})
    assert induction_day(short, cal) == "2019-01-18"
