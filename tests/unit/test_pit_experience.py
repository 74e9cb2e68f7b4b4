"""The experience tree sees nothing after its day (docs/method.md §1 and §9, seed 002 §4).

The prior tree is induced from pre-evaluation data only: its induction day is the last session of
the train split inside the calendar, and the anchors it is induced from are train-split sessions
strictly before the day asked — never a validation or test session, whatever day is asked.

The tree read for day D is D's state joined with the content (principle, embedding) of each
position dated on or before D: content that first appeared after D is never read for D, not even
when a later version of the same position and leaf id exists (a position reused with another
principle after a prequential reset).
"""

import datetime as dt

import numpy as np
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.experience.store import content_versions, known_before, read_tree, write_rows
from finrag_dagster.core.experience.tree import ExperienceTree, Factor, ToEParams, join_table, to_table
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.splits import induction_day, train_days_before
from finrag_dagster.core.tables import Lake

cal = nyse()
SPLITS = {
    "train": (dt.date(2019, 1, 1), dt.date(2019, 1, 31)),
    "validation": (dt.date(2019, 2, 1), dt.date(2019, 2, 28)),
    "test": (dt.date(2019, 3, 1), dt.date(2019, 6, 28)),
}


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


def _vec(i: int) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    v[i] = 1.0
    return v


def _prior() -> ExperienceTree:
    tree = ExperienceTree([Factor("Earnings", ("earnings",)), Factor("Legal", ("lawsuit",))], ToEParams())
    tree.expand(tree.factors[0], "the company beats estimates", _vec(0))
    return tree


def test_the_tree_of_d_never_reads_content_that_appeared_after_d(tmp_path):
    lake = Lake(tmp_path)
    days = ["2019-02-27", "2019-02-28", "2019-03-01"]  # the last two validation sessions, the first test session
    known = known_before(lake, "toe", days[0])
    known, n0 = write_rows(lake, "toe", days[0], to_table(_prior()), known)
    tree = _prior()
    tree.expand(tree.factors[1], "the company faces a lawsuit", _vec(1))  # expanded on 02-28
    known, n1 = write_rows(lake, "toe", days[1], to_table(tree), known)
    tree = _prior()  # the test split starts: back to the prior, and the same position and id get another principle
    tree.expand(tree.factors[1], "the company settles with regulators", _vec(2))
    known, n2 = write_rows(lake, "toe", days[2], to_table(tree), known)
    assert (n0, n1, n2) == (2, 1, 1)  # the prior's leaf and leafless factor; then one new position; then its new version

    on = {d: read_tree(lake, "toe", d, ToEParams()) for d in days}
    assert [(x.leaf_id, x.principle) for x in on[days[1]].leaves()] == [
        ("L00000", "the company beats estimates"),
        ("L00001", "the company faces a lawsuit"),
    ]
    assert np.array_equal(on[days[1]].leaves()[1].embedding, _vec(1))
    assert [(x.leaf_id, x.principle) for x in on[days[2]].leaves()][1] == ("L00001", "the company settles with regulators")
    assert on[days[0]].factors[1].leaves == []
    # the join itself, handed every version in the lake, cuts by date
    versions = content_versions(lake, "toe", "2019-12-31")
    state = pq.read_table(lake.path("experience_tree", tree_id="toe", date=days[1]))
    assert join_table(state, versions, days[1]).column("principle").to_pylist() == ["the company beats estimates", "the company faces a lawsuit"]
    # a position whose content is dated only after the day read is an error, never a silent read of the future
    with pytest.raises(ValueError, match="no content dated on or before it"):
        join_table(state, versions, days[0])
