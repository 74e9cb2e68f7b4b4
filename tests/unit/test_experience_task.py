"""The experience task (seed 002 §5, issue 7 part 2): sector excess returns, the scorers, the
IC metrics (eqs 21-24) and the harness's maturity rule, against hand-computed values."""

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.experience.task import (
    HALF_LIFE,
    HKEYS,
    METHODS,
    DayInput,
    Note,
    NoteMemory,
    baseline_score,
    cs_ic,
    digest,
    excess_returns,
    pipe_scores,
    result_tables,
    run_task,
    sector_returns,
    sentiment,
    task_tree,
    ts_ic,
)
from finrag_dagster.core.experience.tree import ExperienceTree, Factor, Leaf, ToEParams, formula_update
from finrag_dagster.core.settings import ExperienceSettings

D = [dt.date(2021, 3, 1) + dt.timedelta(days=i) for i in range(30)]  # a toy calendar: every day a session


def toy_prices():
    rows = []
    px = {"A1": 100.0, "A2": 50.0, "B1": 20.0, "QQQ": 300.0}
    growth = {"A1": 0.01, "A2": -0.02, "B1": 0.03, "QQQ": 0.005}
    for i, d in enumerate(D[:25]):
        for t in px:
            rows.append((d, t, px[t] * (1 + growth[t]) ** i))
    return pl.DataFrame(rows, schema={"date": pl.Date, "ticker": pl.Utf8, "adj_close": pl.Float64}, orient="row")


UNI = pl.DataFrame({"ticker": ["A1", "A2", "B1", "QQQ"], "sector": ["Tech", "Tech", "Energy", "ETF"], "is_benchmark": [False, False, False, True]})


def test_sector_excess_returns_by_hand():
    daily = sector_returns(toy_prices(), UNI, "QQQ")
    tech = daily.filter(pl.col("target") == "Tech")["ret"].to_numpy()
    assert tech == pytest.approx(np.full(24, (0.01 - 0.02) / 2))  # equal weight, rebalanced daily
    al = excess_returns(daily, "QQQ", D, [D[3], D[20]])
    a = {(r["date"], r["target"], r["horizon"]): r for r in al.iter_rows(named=True)}
    # Tech over 5 days: (1 - 0.005)^5 - 1 minus QQQ's 1.005^5 - 1
    assert a[(D[3], "Tech", "5d")]["alpha"] == pytest.approx((1 - 0.005) ** 5 - 1.005**5)
    assert a[(D[3], "Energy", "1d")]["alpha"] == pytest.approx(0.03 - 0.005)
    assert a[(D[3], "Tech", "20d")]["maturity_day"] == D[23]
    assert (D[20], "Tech", "5d") not in a and (D[20], "Tech", "1d") in a  # close(T+5) does not exist yet: not matured
    assert not any(t == "QQQ" for _, t, _ in a)


def test_baseline_and_pipe_scores_by_hand():
    texts = ["Acme beats estimates on record growth", "Acme faces lawsuit and weak demand", "Acme holds annual meeting"]
    s = [sentiment(x) for x in texts]
    assert s[2] == (0.0, 0.0) and s[0][0] > 0 > s[1][0]
    assert baseline_score(texts) == pytest.approx((s[0][0] * s[0][1] + s[1][0] * s[1][1]) / (s[0][1] + s[1][1]))
    assert baseline_score([]) == 0.0 and baseline_score([texts[2]]) == 0.0
    p = pipe_scores([(texts[0], 0), (texts[1], 2), (texts[2], 0)])  # the neutral item is filtered out: n = 2
    for h in (1, 5, 10, 20):
        tot = s[0][0] + s[1][0] * 0.5 ** (2 / HALF_LIFE[h])
        assert p[f"{h}d"] == pytest.approx(math.tanh(tot / math.sqrt(2)))
    assert pipe_scores([]) == {"1d": 0.0, "5d": 0.0, "10d": 0.0, "20d": 0.0}


def test_ic_metrics_by_hand():
    rows = []
    for d in D[:3]:
        for t, s, a in (("A", 0.1, 0.01), ("B", 0.2, 0.03), ("C", 0.3, 0.02)):
            rows.append(("Pipe", d, t, "1d", s, a))
    rows.append(("Pipe", D[0], "D", "1d", 0.5, None))  # not matured: ignored
    sc = pl.DataFrame(
        rows,
        schema={"method": pl.Utf8, "date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "score": pl.Float64, "alpha": pl.Float64},
        orient="row",
    )
    cs = cs_ic(sc)
    assert cs["value"][0] == pytest.approx(np.corrcoef([0.1, 0.2, 0.3], [0.01, 0.03, 0.02])[0, 1]) and cs["n"][0] == 3
    # per target the score is constant over time: no spread, no tsIC
    ts = ts_ic(sc)
    assert ts["value"][0] is None and ts["n"][0] == 0
    sc2 = sc.with_columns(
        (pl.col("score") + pl.col("date").dt.day() * 0.01).alias("score"), (pl.col("alpha") * pl.col("date").dt.day()).alias("alpha")
    )
    a = sc2.filter((pl.col("target") == "A") & pl.col("alpha").is_not_null()).sort("date")
    expect = np.mean([np.corrcoef(g.sort("date")["score"], g.sort("date")["alpha"])[0, 1] for _, g in sc2.drop_nulls("alpha").group_by("target")])
    assert ts_ic(sc2)["value"][0] == pytest.approx(expect) and a.height == 3
    t = result_tables(sc2)
    assert set(t["table"]) == {"Table 1", "Table 6"}


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_harness_releases_outcomes_only_the_day_after_maturity():
    """One target, the same news every day: a memory may use the outcome of (T0, 1d) from T0 + 2 on."""
    days = D[:6]
    vec = unit([1, 0, 0])

    def inputs(t):
        return [
            DayInput(
                "Tech",
                ["Acme beats estimates"],
                [("AC", "Earnings & Guidance", "Acme beats estimates", "", 0)],
                "Earnings & Guidance. Acme beats estimates",
                "the company beats estimates",
                vec,
            )
        ]

    alphas = pl.DataFrame(
        [(d, "Tech", "1d", -0.02, days[i + 1]) for i, d in enumerate(days[:-1])],
        schema={"date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "alpha": pl.Float64, "maturity_day": pl.Date},
        orient="row",
    )
    prior = ExperienceTree(
        [
            Factor(
                "Earnings", ("earnings", "beats"), [Leaf("L00000", "Earnings", "the company beats estimates", vec, {"1D": 1.0, "3D": 1.0, "5D": 1.0})]
            )
        ]
    )
    prior._next = 1
    sc = run_task(days, inputs, alphas, prior)
    one = sc.filter(pl.col("horizon") == "1d")
    pipe = one.filter(pl.col("method") == "Pipe")["score"].to_list()
    mem0 = one.filter(pl.col("method") == "Pipe+mem0")["score"].to_list()
    toe = one.filter(pl.col("method") == "Pipe+ToE")["score"].to_list()
    assert pipe[0] > 0 and len(set(pipe)) == 1
    # days 0 and 1: nothing matured before the decision -> memories agree with Pipe
    assert mem0[:2] == pipe[:2] and toe[:2] == pipe[:2]
    # day 2: (day 0, 1d) matured on day 1 -> one note with outcome sign -1, gamma 0.5
    assert mem0[2] == pytest.approx(pipe[2] - 0.5)
    # ToE: eq. 13 with r = sign(s)·alpha = -0.02 from q0 at n_hit 0
    q = formula_update(1.0, -0.02, 0)
    assert toe[2] == pytest.approx(pipe[2] * q)
    q = formula_update(q, -0.02, 1)
    assert toe[3] == pytest.approx(pipe[3] * q)
    assert sc.filter(pl.col("method") == "Baseline")["score"].n_unique() == 1
    # the last day's 1d outcome has not matured inside the data: no alpha
    assert one.filter(pl.col("date") == days[-1])["alpha"].null_count() == 5


def test_memrl_reranks_by_learned_value_and_task_tree_resets_utilities():
    m = NoteMemory(rerank=True, k=1, k1=2, beta=0.5)
    m.notes = [Note(unit([1, 0]), "1d", 1.0, q=-1.0), Note(unit([0.9, 0.1]), "1d", -1.0, q=1.0)]
    used = m.recall(unit([1, 0]), "1d")
    assert used[0][0] == 1  # less similar but higher Q wins the rerank
    m.reward(used, 1.0)
    assert m.notes[1].q == pytest.approx(1.0) and m.notes[0].q == -1.0
    flat = NoteMemory(rerank=False, k=1)
    flat.notes = m.notes
    assert flat.recall(unit([1, 0]), "1d")[0][0] == 0
    prior = ExperienceTree([Factor("F", ("x",), [Leaf("L00000", "F", "p", unit([1, 0]), {"1D": 1.7, "3D": 0.2, "5D": 1.0}, 4, 3, 5)])])
    t = task_tree(prior, ToEParams(horizons=("1d", "5d", "10d", "20d")))
    leaf = t.leaves()[0]
    assert leaf.q == {"1d": 1.0, "5d": 1.0, "10d": 1.0, "20d": 1.0} and leaf.n_hit == 0 and leaf.support == 5
    assert prior.leaves()[0].q["1D"] == 1.7  # the prior is not touched


def test_release_learns_every_matured_outcome_and_keeps_the_rest_in_any_order(monkeypatch):
    """An outcome is learned once its maturity is before the task day; one still pending does not hold
    back those queued after it (the queue is in scoring order, not maturity order: 1d after 20d)."""
    from finrag_dagster.core.experience import task as task_mod

    learned = []
    monkeypatch.setattr(task_mod, "_learn_outcome", lambda hn, d0, target, hk, used: learned.append((d0, target, hk)))
    t = dt.date(2021, 3, 10)
    pending = [
        (dt.date(2021, 3, 30), dt.date(2021, 3, 2), "Tech", "20d", {}),  # matures after t: kept
        (dt.date(2021, 3, 10), dt.date(2021, 3, 9), "Tech", "1d", {}),  # matures on t itself: kept
        (dt.date(2021, 3, 9), dt.date(2021, 3, 8), "Energy", "1d", {}),  # matured before t: learned
    ]
    keep = task_mod._release_matured(None, pending, t)
    assert keep == pending[:2]
    assert learned == [(dt.date(2021, 3, 8), "Energy", "1d")]


def _ic_oracle(rows, by, over):
    """mean over groups ``by`` of the Pearson correlation over ``over`` (statistics.correlation, a
    second implementation), groups with < 3 points or a constant side skipped; (value, n)."""
    import statistics

    groups = {}
    for r in rows:
        if r["alpha"] is not None:
            groups.setdefault(r[by], []).append((r[over], r["score"], r["alpha"]))
    vals = []
    for pts in groups.values():
        pts.sort()
        s, a = [p[1] for p in pts], [p[2] for p in pts]
        if len(pts) >= 3 and len(set(s)) > 1 and len(set(a)) > 1:
            vals.append(statistics.correlation(s, a))
    return (statistics.fmean(vals) if vals else None), len(vals)


_TASK_SCORES_FRAME = {"method": pl.Utf8, "date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "score": pl.Float64, "alpha": pl.Float64}


def test_result_tables_equal_tables_built_by_hand():
    """Seed 002 Tables 1, 6 and 2 from a score table of every method and horizon: every row, in the
    order methods x horizons, value and n, with days and targets that fall under the minimum of 3
    points, a constant score, and unmatured rows."""
    import datetime as dt

    rng = np.random.default_rng(7)
    days = [dt.date(2021, 3, d) for d in (1, 2, 3, 4, 5, 8)]
    rows = []
    for mi, m in enumerate(METHODS):
        for hi, h in enumerate(HKEYS):
            for di, d in enumerate(days):
                for ti, t in enumerate(("T1", "T2", "T3", "T4")):
                    if (mi + hi + di + ti) % 7 == 0:
                        continue  # a missing (day, target): some days or targets fall under 3 points
                    score = 0.0 if (m == "Baseline" and h == "1d") else float(rng.normal())  # a constant method-horizon
                    alpha = None if d == days[-1] and h == "20d" else float(rng.normal())  # the last day's 20d not matured
                    alpha = 0.01 if (m == "Pipe" and h == "5d") else alpha  # no spread in alpha either
                    rows.append({"method": m, "date": d, "target": t, "horizon": h, "score": score, "alpha": alpha})
            # a target seen on 2 days only (no tsIC of its own) and a day with 2 targets only (no csIC of its own)
            for d, t in ((days[0], "T5"), (days[1], "T5"), (dt.date(2021, 3, 9), "T1"), (dt.date(2021, 3, 9), "T2")):
                score = 0.0 if (m == "Baseline" and h == "1d") else float(rng.normal())
                alpha = 0.01 if (m == "Pipe" and h == "5d") else float(rng.normal())
                rows.append({"method": m, "date": d, "target": t, "horizon": h, "score": score, "alpha": alpha})
    sc = pl.DataFrame(rows, schema=_TASK_SCORES_FRAME)
    want = []
    for table, metric, by, over in (("Table 1", "tsIC", "target", "date"), ("Table 6", "csIC", "date", "target")):
        for m in METHODS:
            for h in HKEYS:
                v, n = _ic_oracle([r for r in rows if r["method"] == m and r["horizon"] == h], by, over)
                want.append((table, m, h, metric, v, n))
    for metric, by, over in (("tsIC", "target", "date"), ("csIC", "date", "target")):
        for m, name in (("Pipe+ToE", "Pipe+formula"), ("Pipe+ToE(llm)", "Pipe+llm")):
            v, n = _ic_oracle([r for r in rows if r["method"] == m and r["horizon"] == "20d"], by, over)
            want.append(("Table 2", name, "20d", metric, v, n))
    order = {"Table 1": 0, "Table 2": 1, "Table 6": 2}
    names = [*METHODS, "Pipe+formula", "Pipe+llm"]
    want.sort(key=lambda w: (order[w[0]], names.index(w[1]), HKEYS.index(w[2]), w[3]))
    got = result_tables(sc)
    assert got.columns == ["table", "method", "horizon", "metric", "value", "n"]
    assert [r[:4] + (r[5],) for r in got.iter_rows()] == [w[:4] + (w[5],) for w in want]
    for r, w in zip(got.iter_rows(), want):
        assert (r[4] is None) == (w[4] is None) and (r[4] is None or r[4] == pytest.approx(w[4], rel=1e-9)), (r, w)
    assert got.filter(pl.col("method") == "Baseline").filter(pl.col("horizon") == "1d")["value"].null_count() == 2  # no spread
    assert got.filter((pl.col("method") == "Pipe") & (pl.col("horizon") == "5d"))["value"].null_count() == 2
    assert max(w[5] for w in want if w[3] == "tsIC") == 4 and max(w[5] for w in want if w[3] == "csIC") == 6  # T5 and Mar 9 skipped


def test_sector_and_excess_returns_equal_a_second_implementation():
    """Random closes with holes (a member missing a day, the market missing a day, a sector's only
    member missing a day), members without a usable sector, unsorted rows: both frames, row by row,
    against plain loops."""
    from finrag_dagster.core.experience.task import TASK_HORIZONS

    rng = np.random.default_rng(3)
    tickers = {"A1": "Tech", "A2": "Tech", "B1": "Energy", "C1": "", "C2": "Unknown", "C3": None, "E1": "ETF", "QQQ": "Tech"}
    holes = {("A2", D[10]), ("QQQ", D[15]), ("B1", D[5]), ("B1", D[6])}
    px = {}
    for t in tickers:
        p = 50.0
        for d in D[:26]:
            p *= 1 + rng.normal(0, 0.02)
            if (t, d) not in holes:
                px[(t, d)] = p
    rows = [(d, t, v) for (t, d), v in px.items()]
    rng.shuffle(rows)
    prices = pl.DataFrame(rows, schema={"date": pl.Date, "ticker": pl.Utf8, "adj_close": pl.Float64}, orient="row")
    uni = pl.DataFrame(
        {"ticker": list(tickers), "sector": list(tickers.values()), "is_benchmark": [t == "QQQ" for t in tickers]},
        schema={"ticker": pl.Utf8, "sector": pl.Utf8, "is_benchmark": pl.Boolean},
    )
    # each ticker's return: its close over its previous close (whatever the gap)
    ret = {}
    for t in tickers:
        days_t = sorted(d for (u, d) in px if u == t)
        for a, b in zip(days_t, days_t[1:]):
            ret[(t, b)] = px[(t, b)] / px[(t, a)] - 1
    want = {}
    for sector in ("Energy", "Tech"):
        for d in D:
            vals = [ret[(t, d)] for t, s in tickers.items() if s == sector and t != "QQQ" and (t, d) in ret]
            if vals:
                want[(d, sector)] = sum(vals) / len(vals)
    want.update({(d, "QQQ"): ret[("QQQ", d)] for d in D if ("QQQ", d) in ret})
    daily = sector_returns(prices, uni, "QQQ")
    assert daily.columns == ["date", "target", "ret"]
    assert [(d, t) for d, t, _ in daily.iter_rows()] == sorted(want, key=lambda k: (k[1], k[0]))
    assert all(r == pytest.approx(want[(d, t)], rel=1e-12) for d, t, r in daily.iter_rows())

    asked = [
        D[0],
        D[27],
        D[2],
        D[7],
        D[9],
        D[14],
        D[24],
    ]  # D[27]: no closes (skipped, the later days still count); D[7]: Energy has no return on D[5], D[6]
    exp = []
    for t in asked:
        if not any(k[0] == t for k in want):
            continue
        for h in TASK_HORIZONS:
            if D.index(t) + h >= len(D):
                continue
            span = D[D.index(t) + 1 : D.index(t) + h + 1]
            if any((d, "QQQ") not in want for d in span) or span[-1] not in {k[0] for k in want}:
                continue
            m = math.prod(1 + want[(d, "QQQ")] for d in span) - 1
            for sector in ("Energy", "Tech"):
                if all((d, sector) in want for d in span):
                    exp.append((t, sector, f"{h}d", math.prod(1 + want[(d, sector)] for d in span) - 1 - m, span[-1]))
    al = excess_returns(daily, "QQQ", D, asked)
    assert al.columns == ["date", "target", "horizon", "alpha", "maturity_day"]
    got = list(al.iter_rows())
    assert [g[:3] + g[4:] for g in got] == [e[:3] + e[4:] for e in exp]
    assert all(g[3] == pytest.approx(e[3], rel=1e-9, abs=1e-12) for g, e in zip(got, exp))
    assert {e[1] for e in exp} == {"Energy", "Tech"} and (D[7], "Energy", "1d") in {e[:3] for e in exp}
    with pytest.raises(ValueError, match="no returns for the market ticker SPY"):
        excess_returns(daily, "SPY", D, asked)


def test_digest_keeps_the_k_events_with_most_hits_in_order():
    from finrag_dagster.core.experience.induction import factor_text, masked

    names = {"ACME": ["Acme Corp"]}
    ev = [
        ("ACME", "Other", "Acme holds annual meeting", ""),  # 0 hits
        ("ACME", "Earnings & Guidance", "Acme beats estimates", ""),  # 1 hit
        ("ACME", "Earnings & Guidance", "Acme beats estimates on record growth, strong surge and upgrade", ""),  # 6
        ("ACME", "Legal & Regulatory", "", "Acme beats estimates on record growth"),  # 3, no headline: no skeleton
        ("ACME", "Legal & Regulatory", "Acme faces lawsuit", ""),  # 1 hit, ties with the second by its skeleton
    ]
    top = [ev[2], ev[3], ev[1] if masked("ACME", ev[1][2], names) < masked("ACME", ev[4][2], names) else ev[4]]
    f_text, state = digest(ev, names)
    assert f_text == " ".join(factor_text(et, h, s) for _, et, h, s in top)
    assert state == "; ".join(m for _, _, h, _ in top if (m := masked("ACME", h, names)))
    assert state.count("; ") == 1  # the event without a headline gives no skeleton
    assert digest(ev, names, k=1) == (factor_text(*ev[2][1:]), masked("ACME", ev[2][2], names))
    assert "Acme" not in state  # the company's name is masked in the skeletons
    # a tie in hits goes by the skeleton, not by the factor text (here they disagree)
    tie = [("ACME", "Legal & Regulatory", "Acme beats estimates", ""), ("ACME", "Earnings & Guidance", "Acme faces lawsuit", "")]
    assert digest(tie, names, k=1)[0] == factor_text(*tie[0][1:])


def test_sentiment_saturates_at_four_hits():
    from finrag_dagster.core.reader.embedded import tone

    for text, hits in (
        ("Acme beats estimates", 1),
        ("Acme beats estimates on record growth", 3),
        ("Acme beats estimates on record growth, strong surge and upgrade", 6),
    ):
        t, n = tone(text)
        assert n == hits and sentiment(text) == (t * min(1.0, hits / 4), min(1.0, hits / 4))
    mild = "Acme faces lawsuit"  # one hit: importance 1/4, and the only item: the score is its tone
    assert baseline_score([mild]) == pytest.approx(sentiment(mild)[0]) == -0.25  # weights below 1 in all still count


def test_note_memories_recall_adjust_and_learn_by_hand():
    v = lambda *x: np.asarray(x, dtype=np.float64) / np.linalg.norm(x)  # noqa: E731
    notes = [Note(v(1, 0), "5d", 1.0), Note(v(1, 1), "5d", -1.0), Note(v(0, 1), "5d", 1.0), Note(v(-1, 0), "5d", 1.0), Note(v(1, 0), "1d", -1.0)]
    q = v(2, 1)
    sims = {i: float(np.dot(q, notes[i].vec)) for i in range(4)}  # note 3 points away: never recalled; note 4 is another horizon
    flat = NoteMemory(rerank=False, k=2, notes=[Note(n.vec, n.horizon, n.outcome) for n in notes])
    used = flat.recall(q, "5d")
    assert used == sorted(((i, s) for i, s in sims.items() if s > 0), key=lambda x: -x[1])[:2]
    m = sum(s * flat.notes[i].outcome for i, s in used) / sum(s for _, s in used)
    assert flat.adjust(0.1, used) == pytest.approx(0.1 + 0.5 * m)
    assert flat.adjust(0.9, [(0, 1.0)]) == 1.0 and flat.adjust(-0.9, [(1, 1.0)]) == -1.0 and flat.adjust(0.3, []) == 0.3
    flat.reward(used, 1.0)
    assert all(n.q == 0.0 for n in flat.notes)  # mem0 learns no value
    rl = NoteMemory(rerank=True, k=2, k1=3, beta=0.5, lr=0.2, notes=[Note(n.vec, n.horizon, n.outcome) for n in notes])
    rl.notes[2].q = 0.9  # a valued note climbs above a closer one
    got = rl.recall(q, "5d")
    pool = sorted(((i, s) for i, s in sims.items() if s > 0), key=lambda x: -x[1])[:3]
    want = sorted(pool, key=lambda x: -(0.5 * x[1] + 0.5 * rl.notes[x[0]].q))[:2]
    assert got == want and got[0][0] == 2
    rl.reward(got, -1.0)
    assert rl.notes[2].q == pytest.approx(0.9 + 0.2 * (-1.0 - 0.9)) and rl.notes[got[1][0]].q == pytest.approx(0.2 * -1.0)
    assert flat.recall(v(0, -1), "5d") == []  # notes at a right angle (similarity 0) or beyond are not recalled
    tie = NoteMemory(
        rerank=True, k=1, k1=2, beta=0.5, notes=[Note(np.array([0.8, 0.6]), "1d", 1.0, q=0.2), Note(np.array([0.6, 0.8]), "1d", 1.0, q=0.4)]
    )
    assert tie.recall(np.array([1.0, 0.0]), "1d") == [(0, 0.8)]  # 0.5 * 0.8 + 0.5 * 0.2 = 0.5 * 0.6 + 0.5 * 0.4: the first note


def test_task_tree_copies_the_prior_with_fresh_utilities():
    prior = ExperienceTree([Factor("Earnings", ("earnings",), [Leaf("L00007", "Earnings", "beats lift", unit([1, 0]), {"1D": 3.0}, 4, 2, 5)])])
    prior._next = 8
    params = ToEParams(q0=2.0, horizons=HKEYS)
    t = task_tree(prior, params)
    (leaf,) = t.leaves()
    assert (leaf.leaf_id, leaf.factor, leaf.principle, leaf.support) == ("L00007", "Earnings", "beats lift", 5)
    assert leaf.q == {h: 2.0 for h in HKEYS} and (leaf.n_recall, leaf.n_hit) == (0, 0)
    assert leaf.embedding is not prior.leaves()[0].embedding and np.array_equal(leaf.embedding, prior.leaves()[0].embedding)
    assert t.params is params and t._next == 8 and (t.factors[0].name, t.factors[0].keywords) == ("Earnings", ("earnings",))


def _toe_tree(q0=2.0, leaves=None):
    params = ToEParams(q0=q0, horizons=HKEYS)
    leaves = leaves or [Leaf("L00000", "Earnings", "the company beats estimates", unit([1, 0, 0]), {h: 3.0 for h in HKEYS})]
    tree = ExperienceTree([Factor("Earnings", ("earnings", "beats"), leaves)], params)
    tree._next = len(leaves)
    return tree


def _harness(**kw):
    from finrag_dagster.core.experience.task import _Harness

    base = dict(alpha={}, methods=METHODS, mems={}, trees={}, expansion_cap=2, llm_update=None, q0=2.0)
    return _Harness(**{**base, **kw})


def _day_input(vec, state="the company beats estimates"):
    return DayInput("Tech", [], [], "Earnings & Guidance. Acme beats estimates", state, vec)


def test_toe_score_is_pipe_times_q_over_q0_clipped_and_expands_within_the_cap():
    from finrag_dagster.core.experience.task import _toe_score

    hn, tree = _harness(), _toe_tree()
    x = _day_input(unit([1, 0, 0]))
    assert _toe_score(hn, tree, x, "1d", 0.5) == (0.75, ("L00000", 0.75))  # 0.5 * 3 / 2
    assert _toe_score(hn, tree, x, "1d", 0.9)[0] == 1.0 and _toe_score(hn, tree, x, "1d", -0.9)[0] == -1.0
    assert _toe_score(hn, tree, _day_input(None), "1d", 0.4) == (0.4, None)  # no state vector: Pipe's score
    assert _toe_score(hn, tree, _day_input(unit([0, 1, 0]), state=""), "1d", 0.4) == (0.4, None)  # no skeleton to expand with
    s, used = _toe_score(hn, tree, _day_input(unit([0, 1, 0]), state="a new principle"), "1d", 0.4)
    new = tree.leaves()[-1]
    assert (s, used) == (0.4, (new.leaf_id, 0.4)) and new.principle == "a new principle" and new.n_recall == 1  # q0 / q0
    assert len(tree.leaves()) == 2
    assert _toe_score(hn, tree, _day_input(unit([0, 0, 1]), state="another"), "1d", 0.4) == (0.4, None)  # the factor is full (cap 2)
    assert len(tree.leaves()) == 2


def test_toe_score_selects_by_the_horizons_own_utility():
    from finrag_dagster.core.experience.task import _toe_score

    a = Leaf("L00000", "Earnings", "a", unit([1, 0.1, 0]), {"1d": 0.5, "5d": 3.0, "10d": 3.0, "20d": 3.0})
    b = Leaf("L00001", "Earnings", "b", unit([1, 0.2, 0]), {"1d": 3.0, "5d": 0.5, "10d": 0.5, "20d": 0.5})
    tree = _toe_tree(leaves=[a, b])
    s, used = _toe_score(_harness(), tree, _day_input(unit([1, 0.1, 0])), "1d", 0.2)
    assert used[0] == "L00001" and s == pytest.approx(0.2 * 3.0 / 2.0)  # by mean Q, a would win


def test_learn_outcome_feeds_each_method_what_it_used():
    from finrag_dagster.core.experience.task import _learn_outcome

    d0 = dt.date(2021, 3, 1)
    calls = []
    rl, flat = NoteMemory(rerank=True), NoteMemory(rerank=False)
    rl.notes.append(Note(unit([1, 0, 0]), "1d", 1.0))
    trees = {"Pipe+ToE": _toe_tree(), "Pipe+ToE(llm)": _toe_tree()}
    hn = _harness(alpha={(d0, "Tech", "1d"): (-0.02, D[1])}, mems={"Pipe+mem0": flat, "Pipe+MemRL": rl}, trees=trees)
    hn.llm_update = lambda *a: calls.append(a)
    vec = unit([0, 1, 0])
    used = {
        "_vec": vec,
        "Pipe+mem0": (vec, 0.3, []),
        "Pipe+MemRL": (vec, 0.3, [(0, 0.9)]),
        "Pipe+ToE": ("L00000", 0.0),
        "Pipe+ToE(llm)": ("L00000", 1.0),
    }
    _learn_outcome(hn, d0, "Tech", "1d", used)
    assert rl.notes[0].q == pytest.approx(0.2 * (-1.0 - 0.0))  # sign(score) * sign(alpha) = -1
    assert [(n.horizon, n.outcome) for n in flat.notes] == [("1d", -1.0)] and rl.notes[-1].outcome == -1.0 and np.array_equal(flat.notes[0].vec, vec)
    assert trees["Pipe+ToE"].leaves()[0].q["1d"] == 3.0  # a score of 0 took no side: nothing to learn
    assert calls == [(trees["Pipe+ToE(llm)"], "L00000", "1d", 1.0, -0.02)]
    used["Pipe+ToE"] = ("L00000", 1.0)
    _learn_outcome(hn, d0, "Tech", "1d", {**used, "_vec": None})
    assert trees["Pipe+ToE"].leaves()[0].q["1d"] == pytest.approx(formula_update(3.0, -0.02, 0, q0=2.0, eta=10.0))
    assert len(flat.notes) == 1  # no state vector: no new note
    hn.alpha[(d0, "Tech", "5d")] = (0.0, D[5])  # no move at all: MemRL's reward is 0
    q = rl.notes[0].q
    _learn_outcome(hn, d0, "Tech", "5d", {"Pipe+MemRL": (vec, 0.3, [(0, 0.9)])})
    assert rl.notes[0].q == pytest.approx(q + 0.2 * (0.0 - q))
    hn.llm_update = None
    with pytest.raises(ValueError, match=r"^Pipe\+ToE\(llm\) needs an LLM update function$"):
        _learn_outcome(hn, d0, "Tech", "1d", used)


def test_run_task_passes_q0_eta_the_llm_update_and_both_memories(monkeypatch):
    """q0 and eta reach the task trees; Pipe+ToE(llm) learns through the update function it is
    given; mem0 is the flat memory and MemRL the reranking one."""
    from finrag_dagster.core.experience import task as task_mod

    made = []

    class Spy(NoteMemory):
        def __init__(self, **kw):
            super().__init__(**kw)
            made.append(kw.get("rerank"))

    monkeypatch.setattr(task_mod, "NoteMemory", Spy)
    days = D[:4]
    vecs = [unit([1, 0, 0]), unit([1, 0.3, 0])]  # both clear the leaf's threshold: one leaf learns from both

    def inputs(t):
        assert t in days  # asked for the day being scored
        ev = [("AC", "Earnings & Guidance", "Acme beats estimates", "", 0)]
        f_text = "Earnings & Guidance. Acme beats estimates"
        out = [DayInput(f"T{i}", ["Acme beats estimates"], ev, f_text, "the company beats estimates", v) for i, v in enumerate(vecs)]
        out.append(DayInput("T2", ["Acme beats estimates"], ev, f_text, "the company beats estimates", None))  # no state vector
        out.append(DayInput("T3", ["Acme beats estimates"], ev, f_text, f"a new principle {t}", unit([0, 1, 0])))  # clears no leaf: expands
        return out

    alphas = pl.DataFrame(
        [(d, f"T{i}", "1d", (-0.02, 0.03)[i], days[k + 1]) for k, d in enumerate(days[:-1]) for i in range(2)],
        schema={"date": pl.Date, "target": pl.Utf8, "horizon": pl.Utf8, "alpha": pl.Float64, "maturity_day": pl.Date},
        orient="row",
    )
    calls = []

    def llm_update(tree, leaf_id, hk, score, a):
        calls.append((leaf_id, hk, a))
        tree.update(leaf_id, hk, float(np.sign(score)) * a)

    sc = run_task(days, inputs, alphas, _toe_tree(q0=1.0), methods=METHODS, params=ExperienceSettings(q0=2.0, eta=5.0), llm_update=llm_update)
    assert made == [False, True]  # Pipe+mem0, Pipe+MemRL
    one = sc.filter((pl.col("horizon") == "1d") & (pl.col("target") == "T0")).sort("date")
    pipe = one.filter(pl.col("method") == "Pipe")["score"].to_list()
    assert pipe[0] > 0
    q = formula_update(formula_update(2.0, -0.02, 0, q0=2.0, eta=5.0), 0.03, 1, q0=2.0, eta=5.0)  # day 0's two outcomes, learned on day 2
    for m in ("Pipe+ToE", "Pipe+ToE(llm)"):
        toe = one.filter(pl.col("method") == m)["score"].to_list()
        assert toe[:2] == pytest.approx(pipe[:2])  # q = q0 = 2 over q0 = 2
        assert toe[2] == pytest.approx(min(1.0, pipe[2] * q / 2.0)), m
    assert calls[:2] == [("L00000", "1d", -0.02), ("L00000", "1d", 0.03)]
    t2 = sc.filter(pl.col("target") == "T2")
    for m in ("Pipe+mem0", "Pipe+MemRL", "Pipe+ToE"):  # without a state vector every memory gives Pipe's score
        assert t2.filter(pl.col("method") == m)["score"].to_list() == t2.filter(pl.col("method") == "Pipe")["score"].to_list()
    got = {(r["date"], r["target"], r["horizon"]): r["alpha"] for r in sc.filter(pl.col("method") == "Pipe").iter_rows(named=True)}
    want = {(d, t, h): a for d, t, h, a, _ in alphas.iter_rows()}
    assert {k: v for k, v in got.items() if v is not None} == want and got[(days[-1], "T0", "1d")] is None
