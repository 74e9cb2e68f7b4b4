"""Table 6 (the validation sensitivity that selects λ/δ for the test split) is point-in-time.

The ``sensitivity`` asset runs on a small hand-built lake: two anchors on each validation day and
on the first test days, the embedded reader, labels for every (day, ticker, horizon). Table 6 must
re-run the validation days only and score them only with labels that matured before the test
split starts (the selection is used from the test split's first day): every row's ``n`` is the
number of (validation anchor, horizon) pairs whose label matured before that day, counted by hand.
"""

import datetime as dt

import dagster as dg
import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake
from finrag_dagster.defs.resources import FinragResource

cal = nyse()
H = {"1D": 1, "3D": 3, "5D": 5}
TRAIN = (dt.date(2021, 1, 4), dt.date(2021, 1, 29))
VALID = (dt.date(2021, 2, 1), dt.date(2021, 2, 12))  # 10 sessions
TEST = (dt.date(2021, 2, 16), dt.date(2021, 3, 31))  # 15 Feb 2021 is a holiday
TEST_MATERIALISED = cal.sessions_in_range(TEST[0], dt.date(2021, 2, 19))
TICKERS = {"AAA": "Acme Corp", "BBB": "Bolt Inc"}
HEADLINES = ("{c} beats estimates and raises guidance on record growth", "{c} misses estimates, cuts outlook amid weak demand")
UTC = dt.timezone.utc


def _ts(day: dt.date, hour: int) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _universe() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "ticker": [*TICKERS, "QQQ"],
            "company": [*TICKERS.values(), "Invesco QQQ"],
            "sector": ["IT", "IT", "ETF"],
            "sub_industry": [None, None, None],
            "cik": [1, 2, None],
            "aliases": ["acme", "bolt", ""],
            "is_benchmark": [False, False, True],
        },
        schema_overrides={"sub_industry": pl.Utf8, "cik": pl.Int64},
    )


def _anchor(d: dt.date, aid: str, tk: str, head: str, close: dt.datetime) -> dict:
    return {
        "anchor_id": aid,
        "passage_id": aid,
        "ticker": tk,
        "sector": "IT",
        "public_time": _ts(d, 15),
        "time_precision": "second",
        "decision_time": close,
        "session": "regular",
        "headline": head,
        "summary": "",
        "url": f"https://x/{aid}",
        "event_type": "Earnings & Guidance",
        "cue_counts": "{}",
        "dup_cluster": aid,
    }


def _passage(d: dt.date, aid: str, k: int, fam: str, tk: str, company: str) -> tuple[dict, dict]:
    """(evidence row, candidate row) of the anchor's k-th passage, published at 13:00 on its day."""
    pid = f"P{aid}{k}"
    ev = {
        "passage_id": pid,
        "source_family": fam,
        "doc_id": pid,
        "ticker": tk,
        "sector": "IT",
        "public_time": _ts(d, 13),
        "time_precision": "second",
        "form_type": None if fam == "news" else "8-K",
        "item": None,
        "fiscal_period": None,
        "url": f"https://x/{pid}",
        "title": f"{company} update {k}",
        "title_key": f"{pid}",
        "text": f"{company} reports results {k}",
        "dup_cluster": pid,
    }
    cand = {
        "anchor_id": aid,
        "passage_id": pid,
        "rank": k + 1,
        "bm25": 1.0 - k,
        "dense": 0.5 - 0.1 * k,
        "relevance": 0.9 - 0.2 * k,
        "is_peer": False,
        "source_family": fam,
        "ticker": tk,
    }
    return ev, cand


def _labels(d: dt.date, i: int, j: int, tk: str) -> list[dict]:
    out = []
    for h, n in H.items():
        y = (1, 0, -1)[(i + j + n) % 3]
        out.append(
            {
                "ticker": tk,
                "horizon": h,
                "maturity_day": cal.offset(d, n),
                "status": "ok",
                "n_obs": 200,
                **{"R": 0.0, "Rm": 0.0, "alpha": 0.0, "beta": 1.0, "sigma": 0.01},
                "epsilon": 0.015 * y,
                "z": 1.5 * y,
                "y": y,
            }
        )
    return out


CARD_NUMBERS = ("ret_1d", "ret_5d", "ret_20d", "mkt_ret_1d", "mkt_ret_5d", "mkt_ret_20d", "rel_5d", "rel_20d")
CARD_NUMBERS += ("vol_20d", "vol_252d", "mkt_vol_20d", "mkt_vol_252d")


def _market_rows(d: dt.date, i: int, close: dt.datetime) -> tuple[list[dict], list[dict]]:
    """(returns rows of every ticker, context-card rows of the universe's stocks) of day ``d``."""
    rets, cards = [], []
    for tk in [*TICKERS, "QQQ"]:
        r = 0.01 * ((i % 3) - 1)
        rets.append({"ticker": tk, "adj_close": 100.0, **{f"ret_{n}d": r for n in (1, 3, 5, 10, 20)}})
        rets[-1].update(vol_20d=0.01, vol_252d=0.01, n_obs_252d=252)
        if tk != "QQQ":
            cards.append(
                {
                    "ticker": tk,
                    "as_of": close,
                    **{c: 0.0 for c in CARD_NUMBERS},
                    "momentum_state": "flat",
                    "relative_state": "in line",
                    "risk_state": "normal",
                    "market_trend": "range-bound",
                    "card_text": f"as_of: {d} close",
                }
            )
    return rets, cards


def build_lake(root) -> Lake:
    lake = Lake(root)
    lake.write("universe", _universe())
    rng = np.random.default_rng(0)
    ev_rows, emb = [], []
    days = cal.sessions_in_range(VALID[0], VALID[1]) + TEST_MATERIALISED
    for i, d in enumerate(days):
        close = cal.close_time(d).to_pydatetime()
        anchors, cands, labels = [], [], []
        for j, (tk, company) in enumerate(TICKERS.items()):
            aid = f"N{d:%Y%m%d}{tk}"
            anchors.append(_anchor(d, aid, tk, HEADLINES[(i + j) % 2].format(c=company), close))
            for k, fam in enumerate(("news", "sec_filing")):
                ev, cand = _passage(d, aid, k, fam, tk, company)
                ev_rows.append(ev)
                emb.append(rng.normal(size=384))
                cands.append(cand)
            labels += _labels(d, i, j, tk)
        rets, cards = _market_rows(d, i, close)
        lake.write("anchors", pl.DataFrame(anchors), date=d)
        lake.write("candidates", pl.DataFrame(cands, schema_overrides={"rank": pl.Int32}), date=d)
        lake.write("context_cards", pl.DataFrame(cards), date=d)
        lake.write("labels", pl.DataFrame(labels, schema_overrides={"y": pl.Int8, "n_obs": pl.Int32}), date=d)
        lake.write("returns", pl.DataFrame(rets), date=d)
    e = np.asarray(emb, dtype=np.float32)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    ev = pl.DataFrame(ev_rows, schema_overrides={"form_type": pl.Utf8, "item": pl.Utf8, "fiscal_period": pl.Utf8})
    lake.write("evidence", ev.with_columns(pl.Series("embedding", e, dtype=pl.Array(pl.Float32, 384))), date=VALID[0])
    return lake


def expected_n() -> int:
    """(validation anchor, horizon) pairs whose label matured before the test split's first day."""
    return sum(len(TICKERS) for d in cal.sessions_in_range(*VALID) for n in H.values() if cal.offset(d, n) < TEST[0])


def test_table6_scores_validation_days_with_labels_matured_before_the_test_split(tmp_path):
    from finrag_dagster.defs.assets.evaluation import build_evaluation_assets

    lake = build_lake(tmp_path / "lake")
    s = Settings(
        lake_dir=lake.root,
        splits={"train": TRAIN, "validation": VALID, "test": TEST},
        calendar={"start": dt.date(2020, 1, 2), "end": TEST[1], "decision_start": VALID[0]},
    )
    sens = next(a for a in build_evaluation_assets(s) if a.key == dg.AssetKey("sensitivity"))
    res = dg.materialize([sens], resources={"finrag": FinragResource.from_settings(s)}, instance=dg.DagsterInstance.ephemeral())
    assert res.success
    table = lake.read("sensitivity")
    grid = table.filter(pl.col("row") != "selected")
    assert grid["row"].n_unique() == 10 and set(grid["split"]) == {"validation"}
    n = expected_n()
    assert 0 < n < len(TICKERS) * len(H) * len(cal.sessions_in_range(*VALID))  # some validation labels mature inside the test split
    assert set(grid["n"].to_list()) == {n}, "Table 6 must be scored on validation labels matured before the test split"
    meta = res.asset_materializations_for_node("sensitivity")[0].metadata
    n_all = len(TICKERS) * len(H) * len(cal.sessions_in_range(*VALID))
    assert meta["labels_used"].value.startswith(f"{n} of {n_all} validation label rows")  # one label row per scored pair here
    assert table.filter(pl.col("row") == "selected").height == 2


def test_table6_cut_is_the_test_split_start_even_before_its_first_anchors_exist(tmp_path):
    from finrag_dagster.defs.assets.evaluation import build_evaluation_assets

    lake = build_lake(tmp_path / "lake")
    for d in TEST_MATERIALISED[:2]:  # the test split's first two days not materialised yet
        lake.path("anchors", date=d).unlink()
    s = Settings(
        lake_dir=lake.root,
        splits={"train": TRAIN, "validation": VALID, "test": TEST},
        calendar={"start": dt.date(2020, 1, 2), "end": TEST[1], "decision_start": VALID[0]},
    )
    sens = next(a for a in build_evaluation_assets(s) if a.key == dg.AssetKey("sensitivity"))
    assert dg.materialize([sens], resources={"finrag": FinragResource.from_settings(s)}, instance=dg.DagsterInstance.ephemeral()).success
    grid = lake.read("sensitivity").filter(pl.col("row") != "selected")
    # the selection is used from TEST[0] on: labels maturing on TEST[0] or later must not choose it
    assert set(grid["n"].to_list()) == {expected_n()}
