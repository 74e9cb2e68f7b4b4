"""Point-in-time of the feedback loop (docs/method.md §1, §4; seed 000 §3.5, seed 002 eq. 13), counted by hand.

A small world stepped through the real ``core.loop``: every decision day has two anchors, every
label of (D, h) matures on D+h and every prediction is right, citing one passage. The memory of
day D must then hold exactly one unit of feedback per (anchor, horizon) whose label matured on or
before D−1 (decision days from the split start), and the experience tree of day D must take the
eq. 13 updates of exactly the labels that matured on D−1 — nothing that matured on D itself.
"""

import json

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.experience.tree import ExperienceTree, Factor, Leaf
from finrag_dagster.core.loop import DayData, LoopEnv, ToEEnv, Variant, run_days
from finrag_dagster.core.memory.source_memory import MemoryParams
from finrag_dagster.core.reader.backends import Backend, BackendConfig, Generation
from finrag_dagster.core.reader.cache import PromptCache
from finrag_dagster.core.reader.prompt import EvidenceItem
from finrag_dagster.core.tables import Lake

cal = nyse()
DAYS = [d.isoformat() for d in cal.sessions_in_range("2021-03-01", "2021-03-12")]  # 10 sessions
H = {"1D": 1, "3D": 3, "5D": 5}
TICKERS = ("AAA", "BBB")
ET = "Earnings & Guidance"


class RightReader(Backend):
    """Predicts every label correctly (+1) and cites the first passage of its context."""

    name = "right"

    def __init__(self):
        super().__init__(BackendConfig())

    @property
    def model(self):
        return "right-v1"

    def generate(self, requests):
        out = []
        for r in requests:
            ev = r.structured.evidence
            sig = {h: {"signal": 1, "ids": [ev[0][0]] if ev else [], "reason": "r"} for h in H}
            out.append(Generation(json.dumps({"event_type": ET, "signals": sig, "main_uncertainty": ""})))
        return out


def world():
    anchors, cands, labels, evidence = {}, {}, {}, {}
    for di, d in enumerate(DAYS):
        arows, crows, lrows = [], [], []
        for t in TICKERS:
            aid = f"{d}_{t}"
            arows.append(
                {"anchor_id": aid, "ticker": t, "headline": f"{t} beats earnings estimates", "summary": "", "event_type": ET, "session": "regular"}
            )
            for k, fam in enumerate(("news", "sec_filing")):
                pid = f"P{aid}_{k}"
                evidence[pid] = EvidenceItem(pid, fam, pid, "text", "2021-02-01T00:00:00+00:00")
                crows.append(
                    {
                        "anchor_id": aid,
                        "passage_id": pid,
                        "rank": k + 1,
                        "bm25": 0.0,
                        "dense": 0.0,
                        "relevance": 0.9 - 0.1 * k,
                        "is_peer": False,
                        "source_family": fam,
                        "ticker": t,
                    }
                )
            for h, n in H.items():
                lrows.append(
                    {
                        "date": cal.sessions[cal.session_index(d)].item(),
                        "ticker": t,
                        "horizon": h,
                        "maturity_day": cal.offset(d, n),
                        "status": "ok",
                        "y": 1,
                        "z": 1.5,
                        "epsilon": 0.01,
                    }
                )
        anchors[d] = pl.DataFrame(arows)
        cands[d] = pl.DataFrame(crows, schema_overrides={"rank": pl.Int32})
        labels[d] = pl.DataFrame(lrows, schema_overrides={"y": pl.Int8})
    return anchors, cands, labels, evidence


def env_for(tmp_path, toe=None):
    anchors, cands, labels, evidence = world()
    lake = Lake(tmp_path)
    return LoopEnv(
        cal=cal,
        day_data=lambda d: DayData(anchors[d], cands[d], {}),
        split_start=lambda d: DAYS[0],
        class_weights=lambda s: {h: {-1: 1.0, 0: 1.0, 1: 1.0} for h in H},
        labels_of=lambda d: labels[d],
        past_of=lambda d, v: None,
        evidence=evidence,
        companies={},
        backend=RightReader(),
        cache_of=lambda d: PromptCache(lake, d),
        decoding={},
        m=2,
        params=MemoryParams(),
        toe=toe,
    )


def matured_by(day: str, last_maturity: str) -> list[tuple[str, str]]:
    """(decision day, horizon) pairs of the run whose label matured on or before ``last_maturity``."""
    return [(d0, h) for d0 in DAYS if d0 < day for h, n in H.items() if cal.offset(d0, n).isoformat() <= last_maturity]


def test_memory_of_day_d_holds_exactly_the_feedback_matured_by_d_minus_1(tmp_path):
    res = run_days(DAYS, Variant("source_memory", "source_memory", 0.3), env_for(tmp_path), None)
    for i, r in enumerate(res):
        prev = cal.offset(r.day, -1).isoformat() if i else None
        want = len(matured_by(r.day, prev)) * len(TICKERS) if i else 0
        # every prediction is right with weight 1 and one cited family: one unit of `a` per (anchor, horizon)
        assert r.snapshot["n"].sum() == want, f"memory of {r.day}"
        assert r.snapshot["b"].sum() == 0
        # what was applied on D matured exactly on D-1
        assert set(r.feedback_applied["maturity_day"].cast(pl.Utf8).to_list()) <= ({prev} if prev else set())
    # the first labels mature on DAYS[1] (1D of DAYS[0]): the memory first sees them on DAYS[2]
    assert [int(r.snapshot["n"].sum()) for r in res[:3]] == [0, 0, 2]


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def prior_tree(day):
    leaf = Leaf("L00000", "Earnings", "the company beats estimates", unit([1, 0, 0]), {h: 1.0 for h in H})
    tree = ExperienceTree([Factor("Earnings", ("earnings", "beats"), [leaf])])
    tree._next = 1
    return tree


def states(day):
    ids = [f"{day}_{t}" for t in TICKERS]
    return (
        ids,
        [f"{ET}. {t} beats earnings estimates" for t in TICKERS],
        ["the company beats earnings estimates"] * 2,
        np.stack([unit([1, 0, 0])] * 2),
    )


def test_toe_tree_of_day_d_is_updated_only_by_labels_matured_on_d_minus_1(tmp_path):
    def no_past(d, v):
        raise AssertionError(f"selections of {d} are in the run")

    env = env_for(tmp_path, ToEEnv(prior=prior_tree, states=states, past_selections=no_past))
    res = run_days(DAYS, Variant("toe", "toe", 0.0, toe=True), env, None)
    assert res[0].toe_updates.height == 0  # the split start: the prior tree, no update
    for i, r in enumerate(res[1:], start=1):
        prev = cal.offset(r.day, -1).isoformat()
        got = sorted((d.isoformat(), h) for d, h in zip(r.toe_updates["decision_day"].to_list(), r.toe_updates["horizon"].to_list()))
        want = sorted((d0, h) for d0, h in matured_by(r.day, prev) if cal.offset(d0, H[h]).isoformat() == prev for _ in TICKERS)
        assert got == want, f"tree updates applied on {r.day}"
        assert set(r.toe_updates["outcome"]) <= {"applied"}
    # 1D of DAYS[0] matures on DAYS[1]: its update comes on DAYS[2], not before
    assert res[1].toe_updates.height == 0 and res[2].toe_updates.height == 2


def test_a_new_split_starts_with_a_memory_of_its_own_decision_days_only(tmp_path):
    """Splits are learned apart: from a split's first day, the memory holds only the feedback of that
    split's decision days, even where a label of the previous split matures inside the new one."""
    env = env_for(tmp_path)
    second = DAYS[3]
    env.split_start = lambda d: DAYS[0] if d < second else second
    res = run_days(DAYS, Variant("source_memory", "source_memory", 0.3), env, None)
    for i, r in enumerate(res):
        prev = cal.offset(r.day, -1).isoformat() if i else None
        first = DAYS[0] if r.day < second else second
        want = sum(1 for d0, _ in matured_by(r.day, prev) if d0 >= first) * len(TICKERS) if i else 0
        assert r.snapshot["n"].sum() == want, f"memory of {r.day}"
    assert int(res[DAYS.index(second) + 1].snapshot["n"].sum()) == 0  # the old split's labels maturing now are not the new memory's
