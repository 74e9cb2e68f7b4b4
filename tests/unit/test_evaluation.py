"""Metrics and the portfolio diagnostic on hand-computed toys (seed 000 eqs 7-9)."""

import datetime as dt
import math

import polars as pl
import pytest

from finrag_dagster.core.evaluation.metrics import event_metrics, rank_ic
from finrag_dagster.core.evaluation.portfolio import (
    CASH,
    buy_and_hold,
    equal_weight_targets,
    run_book,
    sleeves,
    strategy_targets,
    summary,
)
from finrag_dagster.core.f1 import macro_f1, non_neutral_f1

D = [dt.date(2021, 3, d) for d in (1, 2, 3, 4, 5)]


def test_f1_definitions_by_hand():
    yt = [1, 1, 0, 0, -1, -1]
    yp = [1, 0, 0, 1, -1, 0]
    # +1: tp 1, fp 1, fn 1 -> F1 0.5; -1: tp 1, fp 0, fn 1 -> 2/3; 0: tp 1, fp 2, fn 1 -> 0.4
    assert non_neutral_f1(yt, yp) == pytest.approx((0.5 + 2 / 3) / 2)
    assert macro_f1(yt, yp) == pytest.approx((0.5 + 2 / 3 + 0.4) / 3)
    pred = pl.DataFrame({"horizon": ["1D"] * 6 + ["3D"] * 6, "signal": yp + yt, "y": yt + yt})
    m = event_metrics(pred)
    assert m["3D Macro-F1"] == 1.0 and m["Macro-F1"] == pytest.approx(((0.5 + 2 / 3 + 0.4) / 3 + 1.0) / 2)


def test_rank_ic_is_mean_daily_spearman():
    sd = pl.DataFrame(
        {
            "date": [D[0]] * 3 + [D[1]] * 3,
            "horizon": ["1D"] * 6,
            "ticker": list("ABCABC"),
            "signal": [1.0, 0.0, -1.0, 1.0, 0.0, -1.0],
            "z": [2.0, 0.1, -1.0, -2.0, 0.0, 1.0],
        }
    )
    assert rank_ic(sd) == pytest.approx((1.0 + -1.0) / 2)


def test_sleeve_selection_order_and_cap():
    sig = pl.DataFrame({"date": [D[0]] * 4, "ticker": ["B", "A", "C", "D"], "signal": [1.0, 1.0, 0.5, -1.0], "mean_relevance": [0.4, 0.4, 0.9, 0.9]})
    assert list(sleeves(sig, k=2)[D[0]]) == ["A", "B"]  # equal signal and relevance: ticker order
    assert sleeves(sig, k=10)[D[0]] == {"A": 0.1, "B": 0.1, "C": 0.1}  # the rest stays in cash


def test_three_day_overlap_and_turnover_by_hand():
    sl = {D[0]: {"A": 1.0}, D[1]: {"B": 1.0}}
    t = strategy_targets(sl, D, hold=3)
    assert t[D[0]] == {} and t[D[1]] == {"A": pytest.approx(1 / 3)}
    assert t[D[2]] == {"A": pytest.approx(1 / 3), "B": pytest.approx(1 / 3)}
    assert t[D[4]] == {"B": pytest.approx(1 / 3)} and t[D[3]] == {"A": pytest.approx(1 / 3), "B": pytest.approx(1 / 3)}


def test_book_returns_turnover_and_costs_by_hand():
    targets = {D[0]: {"A": 1.0}, D[1]: {}}
    rets = {D[0]: {"A": 0.10}, D[1]: {"A": -0.05}}
    b = run_book(targets, rets, D[:2])
    # day 1: cash -> A, one-way turnover 1, earns +10%; day 2: A -> cash, turnover 1, earns 0
    assert b["turnover"].to_list() == [1.0, 1.0]
    assert b["gross"].to_list() == [pytest.approx(0.10), 0.0]
    assert b["net"].to_list() == [pytest.approx(0.10 - 0.001), pytest.approx(-0.001)]
    # a half-invested book that drifts: A 50% + cash, A +10% -> drifted A = 0.55/1.05
    b2 = run_book({D[0]: {"A": 0.5}, D[1]: {"A": 0.5}}, {D[0]: {"A": 0.10}, D[1]: {"A": 0.0}}, D[:2])
    assert b2["turnover"][0] == pytest.approx(0.5)
    assert b2["turnover"][1] == pytest.approx(abs(0.5 - 0.55 / 1.05))


def test_benchmarks_and_summary():
    rets = {d: {"A": r, "B": -r, "QQQ": r / 2} for d, r in zip(D, [0.01, -0.02, 0.03, 0.0, 0.01])}
    q = buy_and_hold(rets, D, "QQQ")
    assert q["turnover"].sum() == 0 and q["net"].to_list() == [0.005, -0.01, 0.015, 0.0, 0.005]
    ew = run_book(equal_weight_targets(rets, D, ["A", "B"]), rets, D)
    assert ew["gross"].to_list() == pytest.approx([0.0] * 5)
    assert ew["turnover"][0] == pytest.approx(1.0) and ew["turnover"][1] > 0  # drift back to 50/50 costs turnover
    s = summary(pl.DataFrame({"net": [0.01, -0.02, 0.03], "turnover": [0.1, 0.2, 0.3]}))
    assert s["Ann. Ret."] == pytest.approx(252 * 0.02 / 3)
    assert s["Max DD"] == pytest.approx(0.98 - 1)
    assert s["Turnover"] == pytest.approx(0.2)
    assert s["Sharpe"] == pytest.approx(s["Ann. Ret."] / s["Ann. Vol."])
    assert math.isnan(summary(pl.DataFrame({"net": [], "turnover": []}, schema={"net": pl.Float64, "turnover": pl.Float64}))["Sharpe"])
    assert CASH not in ("A", "B")


def test_book_and_rank_ic_are_the_same_to_the_bit_under_any_hash_seed():
    """Set iteration order follows string hashing, which changes per process: the turnover sum and
    the daily IC average must not depend on it (two processes, two PYTHONHASHSEEDs, same bits)."""
    import os
    import subprocess
    import sys

    code = (
        "import datetime as dt, numpy as np, polars as pl\n"
        "from finrag_dagster.core.evaluation.portfolio import run_book\n"
        "from finrag_dagster.core.evaluation.metrics import rank_ic\n"
        "rng = np.random.default_rng(0)\n"
        "names = [f'T{i:03d}' for i in range(60)]\n"
        "days = [dt.date(2021, 1, 1) + dt.timedelta(days=i) for i in range(30)]\n"
        "targets = {d: {n: 0.1 for n in rng.choice(names, 10, replace=False)} for d in days}\n"
        "rets = {d: {n: float(x) for n, x in zip(names, rng.normal(0, 0.02, 60))} for d in days}\n"
        "b = run_book(targets, rets, days)\n"
        "rows = [(d, n, h, float(rng.normal()), float(rng.normal())) for d in days for n in names[:7] for h in ('1D', '3D', '5D')]\n"
        "sd = pl.DataFrame(rows, schema=['date', 'ticker', 'horizon', 'signal', 'z'], orient='row').sample(fraction=1.0, seed=3)\n"
        "print(b['turnover'].to_numpy().tobytes().hex(), np.float64(rank_ic(sd)).tobytes().hex())\n"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1


def test_a_lora_familys_figure_line_is_the_seeds_mean_daily_book():
    """Figure 2's LoRA line: each day's gross, turnover and net averaged over the seeds' books, the
    most names any seed held, in date order (books given out of order)."""
    from finrag_dagster.core.evaluation.tables import seed_mean_book

    days = [dt.date(2021, 1, 5), dt.date(2021, 1, 4)]
    b0 = pl.DataFrame({"date": days, "gross": [0.01, 0.02], "turnover": [0.5, 1.0], "net": [0.009, 0.019], "n_names": [10, 8]})
    b1 = pl.DataFrame({"date": days, "gross": [-0.03, 0.00], "turnover": [0.1, 0.2], "net": [-0.031, -0.001], "n_names": [9, 12]})
    out = seed_mean_book({"s0": b0, "s1": b1}, ["s0", "s1"])
    assert out.columns == b0.columns and out["date"].to_list() == sorted(days)
    assert out["net"].to_list() == pytest.approx([0.009, -0.011])
    assert out["gross"].to_list() == pytest.approx([0.01, -0.01]) and out["turnover"].to_list() == pytest.approx([0.6, 0.3])
    assert out["n_names"].to_list() == [12, 10] and out.schema["n_names"] == pl.Int64


def test_a_metric_no_seed_could_score_is_nan_without_a_warning():
    """Table 3's mean and std over seeds: NaN where no seed has a value, with no RuntimeWarning printed
    into `finrag demo`'s output; otherwise numpy's nanmean and nanstd(ddof=1)."""
    import math
    import warnings

    import numpy as np

    from finrag_dagster.core.evaluation.tables import nanmean, nanstd

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(nanmean([math.nan, math.nan])) and math.isnan(nanstd([math.nan, 0.4]))
        xs = [0.31, math.nan, 0.35, 0.29]
        assert nanmean(xs) == float(np.nanmean(xs)) and nanstd(xs) == float(np.nanstd(xs, ddof=1))
