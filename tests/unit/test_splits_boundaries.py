"""Every boundary of the evaluation splits, on the exact session (docs/method.md §4, §7; seed 000 §4.1).

A split runs from its first to its last *session* inside its dates (the default test split starts
on 1 January 2021, a holiday: its first session is Monday 4 January; the validation split's last
session is Thursday 31 December 2020). What the protocol hangs on those sessions, each checked on
the session before, on, and after the boundary:

* the prequential reset: a decision's memory starts at the first session of its own split;
* Table 6's λ/δ selection (chosen on validation labels matured before the test split) is used from
  the test split's first session, never on a validation day;
* a LoRA variant (fitted on train labels, chosen on validation labels matured before the test
  split) reads from the test split's first session on.
"""

import polars as pl
import pytest

from finrag_dagster.core import loop_io  # not `from ... import test_split_params`: pytest would collect it
from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation.tables import LONG_SCHEMA
from finrag_dagster.core.memory.source_memory import MemoryParams
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.splits import bounds_of_test_split, lora_days, lora_first_day, split_bounds, split_start_of
from finrag_dagster.core.tables import Lake

cal = nyse()
S = Settings()  # train 2019, validation 2020, test 2021-2023
LAST_VALID, FIRST_TEST = "2020-12-31", "2021-01-04"


def test_split_bounds_are_the_first_and_last_session_inside_each_split():
    assert split_bounds(S, cal) == [("2019-01-02", "2019-12-31"), ("2020-01-02", LAST_VALID), (FIRST_TEST, "2023-12-29")]
    assert bounds_of_test_split(S, cal) == (FIRST_TEST, "2023-12-29")


def test_the_memory_resets_on_the_first_session_of_each_split():
    expect = {
        "2019-12-31": "2019-01-02",  # the last train session
        "2020-01-02": "2020-01-02",  # the first validation session
        "2020-01-03": "2020-01-02",
        LAST_VALID: "2020-01-02",
        FIRST_TEST: FIRST_TEST,
        "2021-01-05": FIRST_TEST,
        "2023-12-29": FIRST_TEST,
    }
    assert {d: split_start_of(S, cal, d) for d in expect} == expect


def test_lora_variants_read_from_the_first_test_session_exactly():
    assert lora_first_day(S, cal) == FIRST_TEST
    days = [d.isoformat() for d in cal.sessions_in_range("2020-12-30", "2021-01-05")]
    assert lora_days(S, cal, days) == [FIRST_TEST, "2021-01-05"]


@pytest.fixture
def lake_with_a_selection(tmp_path) -> Lake:
    lake = Lake(tmp_path)
    sel = [("Table 6", "validation", "selected", "lambda", 0.7, None, 10), ("Table 6", "validation", "selected", "delta", 0.05, None, 10)]
    lake.write("sensitivity", pl.DataFrame(sel, schema=LONG_SCHEMA, orient="row"))
    return lake


def test_the_table6_selection_is_used_from_the_first_test_session_and_never_on_a_validation_day(lake_with_a_selection):
    base = MemoryParams(kappa=30.0, delta=0.2, lam=0.3)
    days = [d.isoformat() for d in cal.sessions_in_range("2020-12-29", "2021-01-06")]
    params_of, note = loop_io.test_split_params(S, lake_with_a_selection, cal, base, days)
    assert note == "test split: lambda=0.7, delta=0.05 selected on validation (Table 6)"
    used = {d: (params_of(d).lam, params_of(d).delta) for d in days}
    assert used == {
        "2020-12-29": (0.3, 0.2),
        "2020-12-30": (0.3, 0.2),
        LAST_VALID: (0.3, 0.2),  # the last validation day: its labels chose the selection, so it keeps settings.memory
        FIRST_TEST: (0.7, 0.05),
        "2021-01-05": (0.7, 0.05),
        "2021-01-06": (0.7, 0.05),
    }
    assert all(params_of(d).kappa == 30.0 for d in days)


@pytest.mark.parametrize(
    "splits, needle",
    [
        ({"train": ["2019-07-31", "2019-07-01"]}, "splits.train ends (2019-07-01) before it starts (2019-07-31)"),
        ({"validation": ["2019-12-31", "2020-12-31"]}, "splits.validation starts (2019-12-31) on or before the end of splits.train"),
        ({"test": ["2020-06-01", "2023-12-31"]}, "splits.test starts (2020-06-01) on or before the end of splits.validation"),
    ],
    ids=["inverted", "validation-overlaps-train", "test-overlaps-validation"],
)
def test_splits_out_of_order_are_refused(splits, needle):
    """A split that ends before it starts, or overlaps the one before it (a test day that the
    validation's selection or the training could see), is a settings error naming it."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        Settings.model_validate({"splits": splits})
    Settings.model_validate({"splits": {"train": ["2019-01-01", "2019-06-30"], "validation": ["2019-07-01", "2019-09-30"]}})  # adjacent: fine


@pytest.mark.parametrize(
    "calendar, needle",
    [
        ({"end": "2031-12-31"}, "calendar.end 2031-12-31 lies outside the XNYS calendar finrag builds (2000-01-03 .. 2030-12-31)"),
        ({"start": "1999-12-31"}, "calendar.start 1999-12-31 lies outside"),
        ({"decision_start": "2031-01-02", "end": "2030-12-31"}, "calendar.decision_start 2031-01-02 lies outside"),
    ],
    ids=["end-after", "start-before", "decision-start-after"],
)
def test_calendar_dates_outside_the_trading_calendar_are_refused(calendar, needle):
    """A calendar date past the XNYS window finrag's trading calendar covers is a settings error
    naming it (it was an IndexError deep in a run); the window's own first and last days are fine."""
    from pydantic import ValidationError

    from finrag_dagster.core.calendar import nyse

    with pytest.raises(ValidationError, match=needle.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        Settings.model_validate({"calendar": calendar})
    s = Settings.model_validate({"calendar": {"start": "2000-01-03", "decision_start": "2000-01-03", "end": "2030-12-31"}})
    cal = nyse()
    assert cal.sessions[0].item() == s.calendar.start and cal.sessions[-1].item() == s.calendar.end
