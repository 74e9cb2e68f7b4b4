"""Credit by passage stance recovers the planted source order where "correct when cited" credits
consensus (mechanism test through the real loop code; docs/feedback_loop.md, "Credit by passage
stance").

A simulated half year with the synthetic world's generative model (``sources.synthetic.params``):
each anchor is an event of one of the five types with directions (d_short, d_long) drawn from the
type's configurations, labels y_h = the true direction at each horizon, news tones drawn around
d_short and SEC tones around d_long with the type's reliabilities, so the planted utility
P(tone = y_h) of each (family, type, horizon) cell is ``params.planted_utility``. Each pool holds
three filings and two news passages of the event and five news passages about other events (tone
unrelated). The planted reader weighs several passages like the evidence reader (place, topic,
family horizon prior, the anchor's own tone at half weight) and cites those that pushed its answer
(at most two), so seed 000's credit gives a filing credit when it agreed with a sum that other
passages and the anchor made, and it counts off-topic news that happened to agree. Asked for
stances, it gives each on-topic passage its tone. Everything else is production code: ``core.loop``
(memory update at D from feedback matured on D−1, rerank, read_day, build_feedback).
"""

import json

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation.oracle import family_ordering
from finrag_dagster.core.loop import Variant, run_days
from finrag_dagster.core.reader.backends import Backend, BackendConfig, Generation
from finrag_dagster.core.reader.prompt import EvidenceItem
from finrag_dagster.sources.synthetic import params as P
from tests.unit.oracle_harness import H, oracle_env

cal = nyse()
DAYS = [d.isoformat() for d in cal.sessions_in_range("2021-01-04", "2021-06-30")]
PLACE = (1.0, 0.7, 0.5, 0.35, 0.25)  # the evidence reader's place weights
PRIOR = {"news": (0.8, 0.6, 0.4), "sec_filing": (0.3, 0.6, 0.9)}  # its family horizon priors
ANCHOR_W = (0.5, 0.35, 0.25)  # half a first passage x the anchor's horizon prior


class WeighingReader(Backend):
    """score_h = anchor term + Σ place × topic × prior × tone; cites the passages that pushed the answer."""

    name = "weighing"

    def __init__(self, anchor_tone, passages):
        super().__init__(BackendConfig())
        self.anchor_tone, self.passages = anchor_tone, passages  # headline -> tone; passage id -> (tone, on topic)

    @property
    def model(self):
        return "weighing-v1"

    def generate(self, requests):
        out = []
        for r in requests:
            inp = r.structured
            ev = [(eid, item.source_family, *self.passages[item.passage_id]) for eid, item in inp.evidence]
            sig = {}
            for hi, h in enumerate(H):
                contrib = [(eid, PLACE[k] * (1.0 if on else 0.25) * PRIOR[fam][hi] * t) for k, (eid, fam, t, on) in enumerate(ev)]
                score = ANCHOR_W[hi] * self.anchor_tone[inp.headline] + sum(c for _, c in contrib)
                s = (1 if score > 0 else -1) if abs(score) >= 0.3 else 0
                if s:
                    push = sorted(((e, c) for e, c in contrib if c * s > 0), key=lambda x: -abs(x[1]))
                    cited = [e for e, c in push if abs(c) >= 0.25 * abs(push[0][1])][:2] if push else []
                else:
                    cited = [e for e, fam, t, on in ev if t == 0][:1]
                sig[h] = {"signal": s, "ids": cited, "reason": "weighed"}
            ans = {"event_type": "", "signals": sig, "main_uncertainty": ""}
            if inp.stances:
                ans["stances"] = {eid: t for eid, fam, t, on in ev if on}
            out.append(Generation(json.dumps(ans, sort_keys=True)))
        return out


def build_world(n_per_day: int = 20):
    rng = np.random.default_rng(3)

    def draw(target, rho):
        if rng.random() < rho:
            return target
        return [v for v in (-1, 0, 1) if v != target][int(rng.random() * 2)]

    anchors, cands, labels, evidence, a_tone, passages = {}, {}, {}, {}, {}, {}
    for di, d in enumerate(DAYS):
        arows, crows, lrows = [], [], []
        for j in range(n_per_day):
            aid, ticker, c = f"A{di:03d}_{j:02d}", f"T{j:02d}", P.EVENT_TYPES[(di + j) % 5]
            tp, cfg = P.TYPE_PARAMS[c], P.config_probs(c)
            _, ds, dl = cfg[rng.choice(len(cfg), p=np.array([x[0] for x in cfg]) / sum(x[0] for x in cfg))]
            ys = P.true_dirs(ds, dl)
            a_tone[f"anchor {aid}"] = draw(ds, tp.rho_news)
            arows.append({"anchor_id": aid, "ticker": ticker, "headline": f"anchor {aid}", "summary": "", "event_type": c, "session": "regular"})
            kinds = ["sec_filing"] * 3 + ["news"] * 2 + ["other"] * 5
            rel = rng.uniform(0.2, 1.0, len(kinds))
            for k, kind in enumerate(kinds):
                pid, fam = f"P{aid}_{k}", ("sec_filing" if kind == "sec_filing" else "news")
                if kind == "sec_filing":
                    passages[pid] = (draw(dl, tp.rho_sec), True)
                elif kind == "news":
                    passages[pid] = (draw(ds, tp.rho_news), True)
                else:  # news about another event: mostly neutral, its tone unrelated to this one
                    passages[pid] = (int(rng.choice([-1, 0, 1], p=[0.2, 0.6, 0.2])), False)
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
            for hi, h in enumerate(H):
                m = cal.sessions[cal.session_index(d) + int(h[0])].item()
                lrows.append({"ticker": ticker, "horizon": h, "maturity_day": m, "status": "ok", "y": ys[hi], "z": 1.5 * ys[hi]})
        anchors[d] = pl.DataFrame(arows)
        cands[d] = pl.DataFrame(crows, schema_overrides={"rank": pl.Int32})
        labels[d] = pl.DataFrame(lrows, schema_overrides={"y": pl.Int8})
    return anchors, cands, labels, evidence, a_tone, passages


def test_passage_stance_recovers_the_planted_order_where_cited_correct_credits_consensus():
    anchors, cands, labels, evidence, a_tone, passages = build_world()
    env = oracle_env((anchors, cands, labels, evidence), WeighingReader(a_tone, passages), DAYS[0], weights={-1: 1.0, 0: 1.0, 1: 1.0})
    planted = pl.DataFrame(
        [
            {"source_family": f, "event_type": c, "horizon": h, "planted": P.planted_utility(f, c, int(h[0]))}
            for f in P.FAMILIES
            for c in P.EVENT_TYPES
            for h in H
        ]
    )
    orders, runs = {}, {}
    for rule in ("cited_correct", "passage_stance"):
        env.credit_rule = rule
        runs[rule] = run_days(DAYS, Variant("source_memory", "source_memory", 0.3), env, None)
        orders[rule] = family_ordering(runs[rule][-1].snapshot, planted, min_n=100)
        print(rule, f"{int(orders[rule]['agree'].sum())} of {orders[rule].height} cells in the planted order")
        print(orders[rule].select("event_type", "horizon", "u_news", "u_sec", "planted_news", "planted_sec", "agree"))
    cited, stance = orders["cited_correct"], orders["passage_stance"]
    assert stance.height == 15 and cited.height == 15  # every cell holds n >= 100 from both families
    assert stance["agree"].all()
    assert cited["agree"].mean() <= 0.8  # consensus: 11 of 15 when written
    wrong = {(r["event_type"], r["horizon"]) for r in cited.filter(~pl.col("agree")).iter_rows(named=True)}
    assert (P.CAPITAL, "5D") in wrong and (P.EARNINGS, "1D") in wrong
    # the stance estimate sits on the planted utility; "correct when cited" lifts the weak filings
    # (Earnings and Capital at 1D: planted .38/.41) to the level of the news
    for fam, col in (("news", "u_news"), ("sec_filing", "u_sec")):
        pcol = "planted_news" if fam == "news" else "planted_sec"
        assert (stance[col] - stance[pcol]).abs().max() < 0.06, fam
    over = (cited["u_sec"] - cited["planted_sec"]).max()
    assert over > 0.3, over
    # same reader, same pools: only the credit differs, and the stance run's feedback lineage shows it
    fb = runs["passage_stance"][10].feedback_applied
    assert {"families_right", "families_wrong"} <= set(fb.columns) and fb["applied"].any()
    assert "families_right" not in runs["cited_correct"][10].feedback_applied.columns
