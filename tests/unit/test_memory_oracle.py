"""The feedback loop learns planted source utilities (mechanism test through the real loop code).

A simulated year: every decision day has anchors of the five event types whose candidate pools
hold news and SEC passages of similar static relevance. A planted reader cites the first passage
of its context and is right with the planted probability of that passage's family for the
anchor's (event type, horizon) cell. Everything else is the production code: ``core.loop``
(memory update at D from feedback matured on D−1, reset at the split start, rerank, read_day with
the prompt cache, build_feedback with class weights). The learned û ordering must match the
planted ordering in >= 90% of cells with n >= 100 and the useful family's share of the top-5
must rise. (The same figures for the embedded reader on the synthetic world are in
docs/feedback_loop.md.)
"""

import datetime as dt
import json

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation.oracle import family_ordering, trend, useful_family
from finrag_dagster.core.events import EVENT_TYPES
from finrag_dagster.core.loop import Variant, run_days
from finrag_dagster.core.memory.source_memory import MemoryParams
from finrag_dagster.core.reader.backends import Backend, BackendConfig, Generation
from finrag_dagster.core.reader.prompt import EvidenceItem
from tests.unit.oracle_harness import H, oracle_env, seeded

cal = nyse()
DAYS = [d.isoformat() for d in cal.sessions_in_range("2021-01-04", "2021-12-31")]
# planted P(right | family cited) per event type and horizon; the better family differs by cell
PLANTED = {
    ("news", EVENT_TYPES[0]): (0.75, 0.60, 0.40),
    ("sec_filing", EVENT_TYPES[0]): (0.45, 0.50, 0.72),
    ("news", EVENT_TYPES[1]): (0.40, 0.38, 0.35),
    ("sec_filing", EVENT_TYPES[1]): (0.62, 0.68, 0.74),
    ("news", EVENT_TYPES[2]): (0.78, 0.72, 0.66),
    ("sec_filing", EVENT_TYPES[2]): (0.42, 0.45, 0.40),
    ("news", EVENT_TYPES[3]): (0.70, 0.45, 0.40),
    ("sec_filing", EVENT_TYPES[3]): (0.45, 0.66, 0.70),
    ("news", EVENT_TYPES[4]): (0.55, 0.52, 0.38),
    ("sec_filing", EVENT_TYPES[4]): (0.40, 0.42, 0.60),
}


class PlantedReader(Backend):
    """Cites the first passage of the context; right with the planted probability."""

    name = "planted"

    def __init__(self, truth):
        super().__init__(BackendConfig())
        self.truth = truth  # anchor headline -> (event type, {horizon: label})

    @property
    def model(self):
        return "planted-v1"

    def generate(self, requests):
        out = []
        for r in requests:
            inp = r.structured
            etype, labels = self.truth[inp.headline]
            sig = {}
            for i, h in enumerate(H):
                if not inp.evidence:
                    sig[h] = {"signal": 0, "ids": [], "reason": ""}
                    continue
                pid, item = inp.evidence[0]
                p = PLANTED[(item.source_family, etype)][i]
                right = seeded(inp.headline, h) < p
                y = labels[h]
                sig[h] = {"signal": y if right else (1 if y != 1 else -1), "ids": [pid], "reason": "planted"}
            out.append(Generation(json.dumps({"event_type": etype, "signals": sig, "main_uncertainty": ""})))
        return out


def build_world(n_per_day: int = 24):
    rng = np.random.default_rng(0)
    anchors, cands, labels, truth, evidence = {}, {}, {}, {}, {}
    for di, d in enumerate(DAYS):
        arows, crows, lrows = [], [], []
        for j in range(n_per_day):
            aid = f"A{di:03d}_{j:02d}"
            et = EVENT_TYPES[(di + j) % 5]
            ticker = f"T{j:02d}"
            ys = {h: int(rng.choice([-1, 0, 1], p=[0.3, 0.4, 0.3])) for h in H}
            truth[f"anchor {aid}"] = (et, ys)
            arows.append({"anchor_id": aid, "ticker": ticker, "headline": f"anchor {aid}", "summary": "", "event_type": et, "session": "regular"})
            rel = rng.uniform(0.2, 1.0, 10)
            for k in range(10):
                fam = "news" if k % 2 == 0 else "sec_filing"
                pid = f"P{aid}_{k}"
                evidence[pid] = EvidenceItem(pid, fam, pid, "text", "2021-01-01T00:00:00+00:00")
                crows.append(
                    {
                        "anchor_id": aid,
                        "passage_id": pid,
                        "rank": k + 1,
                        "bm25": 0.0,
                        "dense": 0.0,
                        "relevance": float(rel[k]),
                        "is_peer": False,
                        "source_family": fam,
                        "ticker": ticker,
                    }
                )
            for h in H:
                k = cal.session_index(d) + int(h[0])
                lrows.append(
                    {"ticker": ticker, "horizon": h, "maturity_day": cal.sessions[k].item(), "status": "ok", "y": ys[h], "z": float(ys[h]) * 1.5}
                )
        anchors[d] = pl.DataFrame(arows)
        cands[d] = pl.DataFrame(crows, schema_overrides={"rank": pl.Int32})
        labels[d] = pl.DataFrame(lrows, schema_overrides={"y": pl.Int8})
    return anchors, cands, labels, truth, evidence


def test_the_loop_learns_the_planted_orderings(tmp_path):
    anchors, cands, labels, truth, evidence = build_world()
    env = oracle_env((anchors, cands, labels, evidence), PlantedReader(truth), DAYS[0], tmp_path)
    static = run_days(DAYS, Variant("no_memory", "no_memory", 0.0), env, None)
    learned = run_days(DAYS, Variant("source_memory", "source_memory", 0.3), env, None)

    snap = learned[-1].snapshot
    planted = pl.DataFrame(
        [{"source_family": f, "event_type": c, "horizon": h, "planted": PLANTED[(f, c)][i]} for (f, c) in PLANTED for i, h in enumerate(H)]
    )
    order = family_ordering(snap, planted, min_n=100)
    assert order.height >= 10, "most cells must collect at least 100 feedback from both families"
    assert order["agree"].mean() >= 0.9, order

    use = useful_family(planted)
    # event types whose better family is clearly better once averaged over horizons (the shared context)
    gap = (
        planted.group_by(["event_type", "source_family"])
        .agg(pl.col("planted").mean())
        .pivot(on="source_family", index="event_type", values="planted")
    )
    clear = gap.filter((pl.col("news") - pl.col("sec_filing")).abs() >= 0.15)["event_type"].to_list()
    assert len(clear) >= 2

    def share(results, a, b):
        frames = [r.contexts.join(anchors[r.day].select("anchor_id", "event_type"), on="anchor_id") for r in results[a:b]]
        c = pl.concat(frames).filter(pl.col("event_type").is_in(clear))
        return float((c["source_family"] == c["event_type"].replace_strict(use)).mean())

    windows = [(0, 10)] + [(q * 63, (q + 1) * 63) for q in range(4)]  # the first two weeks, then quarters
    mem = [share(learned, a, b) for a, b in windows]
    base = [share(static, a, b) for a, b in windows]
    print("useful-family share, source_memory:", [round(x, 3) for x in mem], "no_memory:", [round(x, 3) for x in base])
    # the memory term is at most lambda*delta = 0.06, so the context shifts by a few points, not more
    assert mem[-1] > mem[0] + 0.025 and trend(mem) > 0
    assert mem[-1] > base[-1] + 0.04  # static retrieval does not drift
    assert abs(trend(base)) < 0.02
    # the memory on day D only knows feedback matured by D-1: nothing on the first two days
    assert learned[0].snapshot["n"].sum() == 0 and learned[1].snapshot["n"].sum() == 0
    assert learned[2].snapshot["n"].sum() > 0


def test_useful_share_gain_is_memory_minus_static_per_quarter():
    from finrag_dagster.core.evaluation.oracle import useful_share_gain

    planted = pl.DataFrame(
        [
            {"source_family": f, "event_type": c, "horizon": "1D", "planted": p}
            for f, c, p in [("news", "A", 0.8), ("sec_filing", "A", 0.4), ("news", "B", 0.3), ("sec_filing", "B", 0.7)]
        ]
    )
    anchors = pl.DataFrame({"anchor_id": ["a1", "b1", "a2", "b2"], "event_type": ["A", "B", "A", "B"]})
    q1, q2 = dt.date(2020, 1, 2), dt.date(2020, 4, 1)

    def ctx(fams):  # two slots per anchor; a1/b1 in Q1, a2/b2 in Q2
        ids = ["a1", "a1", "b1", "b1", "a2", "a2", "b2", "b2"]
        return pl.DataFrame({"anchor_id": ids, "source_family": fams, "date": [q1] * 4 + [q2] * 4})

    static = ctx(["news", "sec_filing", "news", "news", "news", "sec_filing", "news", "news"])
    memory = ctx(["news", "sec_filing", "news", "news", "news", "news", "sec_filing", "news"])
    g = useful_share_gain(memory, static, anchors, planted)
    # Q1: both 1/4 (a1: news useful, 1 of 2; b1: sec useful, 0 of 2) -> gain 0; Q2: memory 3/4, static 1/4
    assert g["without_memory"].to_list() == [0.25, 0.25]
    assert g["with_memory"].to_list() == [0.25, 0.75]
    assert g["gain"].to_list() == [0.0, 0.5] and g["slots"].to_list() == [4, 4]


def test_changed_contexts_and_memory_terms():
    from finrag_dagster.core.evaluation.oracle import changed_contexts, memory_terms
    from finrag_dagster.core.memory.source_memory import SourceMemory

    static = pl.DataFrame({"anchor_id": ["a", "a", "b", "b", "c"], "passage_id": ["p1", "p2", "p3", "p4", "p5"]})
    memory = pl.DataFrame({"anchor_id": ["a", "a", "b", "b", "d"], "passage_id": ["p2", "p1", "p3", "p9", "p5"]})
    assert changed_contexts(memory, static) == (1, 2)  # only b differs; c and d are not in both

    m = SourceMemory(MemoryParams(kappa=30, delta=0.2, lam=0.3))
    for h in H:
        m.add("news", EVENT_TYPES[0], h, 70.0, True)  # a=70, b=0: û=71/72, η=0.7 -> adj=clip(0.34)=0.2
        m.add("sec_filing", EVENT_TYPES[0], h, 30.0, False)  # a=0, b=30: û=1/32, η=0.5 -> adj=-0.234375 -> -0.2 clipped
    t = memory_terms(m.to_frame(), 0.3).filter(pl.col("event_type") == EVENT_TYPES[0])
    assert abs(t["news"][0] - 0.06) < 1e-12 and abs(t["sec_filing"][0] + 0.06) < 1e-12 and abs(t["news_minus_sec"][0] - 0.12) < 1e-12


def test_a_planted_memory_holds_the_planted_utilities_and_reorders_by_them():
    from finrag_dagster.core.evaluation.oracle import changed_contexts, changed_order, planted_memory
    from finrag_dagster.core.memory.source_memory import rerank

    planted = pl.DataFrame(
        {
            "source_family": ["news", "sec_filing"] * 3,
            "event_type": ["Legal & Regulatory"] * 6,
            "horizon": ["1D", "1D", "3D", "3D", "5D", "5D"],
            "planted": [0.48, 0.655, 0.47, 0.655, 0.42, 0.86],
        }
    )
    mem = planted_memory(planted, MemoryParams(kappa=30, delta=0.2, lam=0.3))
    snap = mem.to_frame().join(planted, on=["source_family", "event_type", "horizon"])
    assert np.allclose(snap["u_hat"], snap["planted"], atol=1e-6) and snap["eta"].min() > 0.999999
    assert np.allclose(snap["adjustment"], (snap["planted"] - 0.5).clip(-0.2, 0.2), atol=1e-6)
    # a pool where the filing sits just below the fifth news passage: the planted memory lifts it in
    rel = [1.0, 0.9, 0.8, 0.7, 0.6, 0.58, 0.5]
    fams = ["news"] * 5 + ["sec_filing", "news"]
    cands = pl.DataFrame(
        {"anchor_id": ["a"] * 7, "passage_id": [f"p{i}" for i in range(7)], "source_family": fams, "relevance": rel, "rank": list(range(1, 8))}
    )
    keys = {"a": "Legal & Regulatory"}
    static, learned = rerank(cands, keys, None, 0.0, 5), rerank(cands, keys, mem, 0.3, 5)
    assert "p5" not in static["passage_id"].to_list() and "p5" in learned["passage_id"].to_list()
    assert changed_contexts(learned, static) == (1, 1) and changed_order(learned, static) == 1
    # a swap inside the top 5 changes the order but not the set
    swapped = static.with_columns(
        pl.when(pl.col("position") == 1).then(2).when(pl.col("position") == 2).then(1).otherwise(pl.col("position")).alias("position")
    )
    assert changed_contexts(swapped, static) == (0, 1) and changed_order(swapped, static) == 1
