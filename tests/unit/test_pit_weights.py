"""Class weights w_y = 1/(3 π_y) come from the previous split's labels that matured before the
evaluated split starts (docs/method.md §4: π_y = validation-split frequency for the test split), counted by hand.

The lake holds labels of three splits with different label mixes: the train split, the validation
split (its last decisions' 3D/5D labels mature inside the test split and are all +1) and the
test split (all −1). Only the validation labels matured before the test start may count.
"""

import datetime as dt
from collections import Counter

import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.loop_io import weights_for
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake

cal = nyse()
H = {"1D": 1, "3D": 3, "5D": 5}
TRAIN = (dt.date(2021, 1, 4), dt.date(2021, 1, 29))
VALID = (dt.date(2021, 2, 1), dt.date(2021, 2, 26))
TEST = (dt.date(2021, 3, 1), dt.date(2021, 3, 31))
TICKERS = ("AAA", "BBB", "CCC")


def y_of(day: dt.date, t: int, h: str) -> int:
    i = cal.session_index(day)
    if TEST[0] <= day:
        return -1  # the test split: all down
    if VALID[0] <= day and cal.offset(day, H[h]) >= TEST[0]:
        return 1  # validation labels that mature inside the test split: all up
    pattern = (0, 0, 1, -1, 0) if VALID[0] <= day else (1, 1, 0, -1)
    return pattern[(i + t + H[h]) % len(pattern)]


@pytest.fixture
def lake(tmp_path):
    lake = Lake(tmp_path)
    for day in cal.sessions_in_range(TRAIN[0], TEST[1]):
        rows = []
        for t, tk in enumerate(TICKERS):
            for h, n in H.items():
                ok = not (tk == "CCC" and h == "1D")  # one series without enough history
                rows.append(
                    {
                        "ticker": tk,
                        "horizon": h,
                        "maturity_day": cal.offset(day, n),
                        "status": "ok" if ok else "insufficient_history",
                        "n_obs": 200 if ok else 50,
                        "R": None,
                        "Rm": None,
                        "alpha": None,
                        "beta": None,
                        "sigma": None,
                        "epsilon": None,
                        "z": 0.0 if ok else None,
                        "y": y_of(day, t, h) if ok else None,
                    }
                )
        lake.write("labels", pl.DataFrame(rows, schema_overrides={"y": pl.Int8, "n_obs": pl.Int32}), date=day)
    return lake


def by_hand(first: dt.date, last: dt.date, start: dt.date) -> dict:
    """w_y per horizon from the labels of decision days first..last that matured before ``start``."""
    out = {}
    for h, n in H.items():
        ys = [
            y_of(d, t, h)
            for d in cal.sessions_in_range(first, last)
            for t, tk in enumerate(TICKERS)
            if not (tk == "CCC" and h == "1D") and cal.offset(d, n) < start
        ]
        c = Counter(ys)
        out[h] = {y: 1.0 / (3.0 * c[y] / len(ys)) for y in (-1, 0, 1) if c[y]}
    return out


class LabelsAndPrices(Lake):
    """The fixture's lake as family_feedback sees it in these tests: its labels and prices, every
    other table empty; it may write feedback only (the writes are dropped)."""

    def read(self, table, *a, **k):
        return super().read(table, *a, **k) if table in ("labels", "prices") else pl.DataFrame()

    def write(self, table, df, **k):
        assert table == "feedback"


def settings(lake):
    return Settings(lake_dir=lake.root, splits={"train": TRAIN, "validation": VALID, "test": TEST})


def test_class_weights_come_from_the_previous_split_matured_before_the_start(lake):
    s = settings(lake)
    for first, last, start in ((VALID[0], VALID[1], TEST[0]), (TRAIN[0], TRAIN[1], VALID[0])):
        w, freq = weights_for(s, cal, lake, start.isoformat())
        want = by_hand(first, last, start)
        for h in H:
            assert {y: w[h][y] for y in want[h]} == pytest.approx(want[h]), f"w_y for {h} at {start}"
        assert set(freq) == set(H)
    # the first split has no previous split: uniform weights
    w, freq = weights_for(s, cal, lake, TRAIN[0].isoformat())
    assert freq == {} and all(v == 1.0 for h in w for v in w[h].values())


def test_labels_of_days_between_two_splits_do_not_count(lake):
    """A validation split that ends a week before the test split: the labels of the days between them
    (decided outside every split, matured before the test start) are not the previous split's."""
    valid = (VALID[0], dt.date(2021, 2, 19))
    s = Settings(lake_dir=lake.root, splits={"train": TRAIN, "validation": valid, "test": TEST})
    w, _ = weights_for(s, cal, lake, TEST[0].isoformat())
    want = by_hand(valid[0], valid[1], TEST[0])
    assert want != by_hand(VALID[0], VALID[1], TEST[0])  # the gap's labels would change the weights
    for h in H:
        assert {y: w[h][y] for y in want[h]} == pytest.approx(want[h]), f"w_y for {h}"


def test_feedback_uses_each_splits_weights_and_reads_them_once_per_split(lake, monkeypatch):
    """family_feedback weighs each day's feedback with its own split's w_y, and works them out once per
    split start, not once per day and variant (per day, the validation and test years read the whole
    previous split's labels again for every day: the five-year loop slowed with each year)."""
    from finrag_dagster.core import loop_io
    from finrag_dagster.core.loop import Variant

    s = settings(lake)
    calls, seen = [], {}
    real = loop_io.weights_for

    def counting(s_, cal_, lake_, start):
        calls.append(start)
        return real(s_, cal_, lake_, start)

    def fake_feedback(out, lab, ctx, as_of_day, weights, memory_key, how):
        seen.setdefault(lab["maturity_day"].min(), []).append(weights)
        return pl.DataFrame({"outcome": ["x"], "correct": [True]})

    monkeypatch.setattr(loop_io, "weights_for", counting)
    monkeypatch.setattr(loop_io, "build_feedback", fake_feedback)
    monkeypatch.setattr(loop_io, "memory_keys", lambda a, v: None)
    monkeypatch.setattr(loop_io, "_drop_hive", lambda df: df)
    days = [d.isoformat() for d in cal.sessions_in_range(VALID[0], TEST[1])]
    variants = [Variant("no_memory", "no_memory", 0.0), Variant("source_memory", "source_memory", 0.5)]
    fb = loop_io.family_feedback(s, LabelsAndPrices(lake.root), cal, variants, days)
    assert fb.rows == 2 * len(days)
    assert sorted(calls) == [VALID[0].isoformat(), TEST[0].isoformat()]  # once per split start
    for first_maturity, ws in seen.items():
        start = VALID[0] if first_maturity < cal.offset(TEST[0], 1) else TEST[0]
        assert all(w == real(s, cal, lake, start.isoformat())[0] for w in ws)


def test_a_shuffled_labels_variant_gets_each_days_labels_permuted_within_each_horizon(lake, monkeypatch):
    """The shuffled-labels control permutes y among the ok labels of one decision day and horizon
    (seed 000 §4.3): the day's labels reach the feedback with their decision day, each horizon's
    values the same multiset as the lake's, in another order."""
    from finrag_dagster.core import loop_io
    from finrag_dagster.core.loop import Variant

    seen = []

    def fake_feedback(out, lab, ctx, as_of_day, weights, memory_key, how):
        seen.append(lab)
        return pl.DataFrame({"outcome": ["x"], "correct": [True]})

    monkeypatch.setattr(loop_io, "build_feedback", fake_feedback)
    monkeypatch.setattr(loop_io, "memory_keys", lambda a, v: {})
    day = VALID[0]
    v = Variant("shuffled_labels_s1", "shuffled_labels", 0.5, shuffle_labels_seed=1)
    loop_io.family_feedback(settings(lake), LabelsAndPrices(lake.root), cal, [v], [day.isoformat()])
    (lab,) = seen
    assert set(lab["date"]) == {day}
    moved = 0
    for h in H:
        got = lab.filter((pl.col("horizon") == h) & (pl.col("status") == "ok")).sort("ticker")
        want = [y_of(day, t, h) for t, tk in enumerate(TICKERS) if not (tk == "CCC" and h == "1D")]
        assert sorted(got["y"].to_list()) == sorted(want)
        moved += got["y"].to_list() != want
    assert moved > 0  # the seed moved at least one horizon's labels
