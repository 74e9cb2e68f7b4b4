"""build_feedback's maturity cut-off (docs/method.md §1: feedback whose maturity day is <= the cut-off only).

A label that is already computed ("ok") but matures after the cut-off — the calendar's next
day, the next session, or later — must give no feedback row; one maturing on the cut-off does.
"""

import datetime as dt

import polars as pl

from finrag_dagster.core.memory.feedback import build_feedback

E = "Earnings & Guidance"


def test_an_ok_label_maturing_after_the_cut_off_gives_no_feedback():
    cut = dt.date(2021, 3, 4)  # a Thursday
    tickers = ("ON", "NEXT_DAY", "NEXT_WEEK", "BEFORE")
    maturity = (cut, cut + dt.timedelta(days=1), cut + dt.timedelta(days=5), cut - dt.timedelta(days=1))
    out = pl.DataFrame(
        {
            "anchor_id": [f"a_{t}" for t in tickers],
            "ticker": list(tickers),
            "event_type": [E] * 4,
            "horizon": ["1D"] * 4,
            "signal": [1] * 4,
            "cited_families": [["news"]] * 4,
        },
        schema_overrides={"signal": pl.Int8, "cited_families": pl.List(pl.Utf8)},
    )
    lab = pl.DataFrame(
        {"ticker": list(tickers), "horizon": ["1D"] * 4, "maturity_day": list(maturity), "status": ["ok"] * 4, "y": [1] * 4, "z": [1.5] * 4},
        schema_overrides={"y": pl.Int8},
    )
    fb = build_feedback(out, lab, pl.DataFrame(), cut, {"1D": {1: 1.0}}, {f"a_{t}": E for t in tickers})
    assert sorted(fb["ticker"].to_list()) == ["BEFORE", "ON"]
    assert (fb["maturity_day"] <= cut).all() and fb["applied"].all()
