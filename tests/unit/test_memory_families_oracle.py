"""The memory recovers utilities planted at the fine families' grain (``memory.families = "fine"``, an
extension beyond seed 000's two families; docs/method.md §4 "Finer source families").

A simulated five months through the real loop code (as tests/unit/test_memory_oracle.py): each pool
holds wire and opinion news, 8-K Item 2.02 and 10-Q passages of similar static relevance; a
planted reader cites the first passage of its context and is right with the planted probability of
that passage's fine family. Within each broad family one kind is useful and the other is not, with
the same mean, so seed 000's two cells see two nearly equal families; the fine scheme's cells must
put wire above opinion and the 8-K above the 10-Q, and the useful kinds' share of the contexts must
rise.
"""

import json

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.events import EVENT_TYPES
from finrag_dagster.core.loop import Variant, run_days
from finrag_dagster.core.memory.families import FamilyMap
from finrag_dagster.core.reader.backends import Backend, BackendConfig, Generation
from finrag_dagster.core.reader.prompt import EvidenceItem
from tests.unit.oracle_harness import H, oracle_env, seeded

cal = nyse()
DAYS = [d.isoformat() for d in cal.sessions_in_range("2021-01-04", "2021-05-28")]
CLASSES = {"wire co": "wire", "opinion co": "opinion"}
# (source_family, publisher, form_type, item) of each kind, and its planted P(right | cited)
KINDS = {
    "news:wire": (("news", "Wire Co", None, None), 0.72),
    "news:opinion": (("news", "Opinion Co", None, None), 0.40),
    "sec:8-K-2.02": (("sec_filing", None, "8-K", "Item 2.02"), 0.70),
    "sec:10-Q": (("sec_filing", None, "10-Q", "Item 2"), 0.42),
}
USEFUL = {"news:wire", "sec:8-K-2.02"}


class PlantedReader(Backend):
    name = "planted"

    def __init__(self, truth, kind_of):
        super().__init__(BackendConfig())
        self.truth, self.kind_of = truth, kind_of

    @property
    def model(self):
        return "planted-fine-v1"

    def generate(self, requests):
        out = []
        for r in requests:
            inp = r.structured
            etype, labels = self.truth[inp.headline]
            pid, item = inp.evidence[0]
            p = KINDS[self.kind_of[item.passage_id]][1]
            sig = {}
            for h in H:
                y = labels[h]
                right = seeded(inp.headline, h) < p
                sig[h] = {"signal": y if right else (1 if y != 1 else -1), "ids": [pid], "reason": "planted"}
            out.append(Generation(json.dumps({"event_type": etype, "signals": sig, "main_uncertainty": ""})))
        return out


def build_world(n_per_day: int = 12):
    rng = np.random.default_rng(1)
    anchors, cands, labels, truth, evidence, kind_of = {}, {}, {}, {}, {}, {}
    kinds = list(KINDS)
    for di, d in enumerate(DAYS):
        arows, crows, lrows = [], [], []
        for j in range(n_per_day):
            aid = f"A{di:03d}_{j:02d}"
            et = EVENT_TYPES[(di + j) % 5]
            ticker = f"T{j:02d}"
            ys = {h: int(rng.choice([-1, 0, 1], p=[0.3, 0.4, 0.3])) for h in H}
            truth[f"anchor {aid}"] = (et, ys)
            arows.append({"anchor_id": aid, "ticker": ticker, "headline": f"anchor {aid}", "summary": "", "event_type": et, "session": "regular"})
            rel = rng.uniform(0.5, 0.7, 8)  # similar static relevance: the memory term (at most 0.06) can reorder them
            for k in range(8):
                kind = kinds[k % 4]
                fam, _, form, item = KINDS[kind][0]
                pid = f"P{aid}_{k}"
                kind_of[pid] = kind
                evidence[pid] = EvidenceItem(pid, fam, pid, "text", "2021-01-01T00:00:00+00:00", form, item)
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
    return anchors, cands, labels, truth, evidence, kind_of


def _env(tmp, world, family_of):
    anchors, cands, labels, truth, evidence, kind_of = world
    return oracle_env((anchors, cands, labels, evidence), PlantedReader(truth, kind_of), DAYS[0], tmp, family_of=family_of)


def test_fine_families_recover_utilities_planted_below_the_broad_families(tmp_path):
    world = build_world()
    evidence, kind_of = world[4], world[5]
    fm = FamilyMap("fine", CLASSES)
    fm.add((pid, e.source_family, KINDS[kind_of[pid]][0][1], e.form_type, e.item, e.text) for pid, e in evidence.items())
    assert {fm.of[p] for p in kind_of} == set(KINDS) and all(fm.of[p] == k for p, k in kind_of.items())
    v = Variant("source_memory", "source_memory", 0.3)
    fine = run_days(DAYS, v, _env(tmp_path / "fine", world, fm), None)
    broad = run_days(DAYS, v, _env(tmp_path / "broad", world, None), None)

    snap = fine[-1].snapshot
    assert set(snap["source_family"]) == set(fm.families) and set(broad[-1].snapshot["source_family"]) == {"news", "sec_filing"}
    cells = snap.pivot(on="source_family", index=["event_type", "horizon"], values="u_hat")
    n = snap.pivot(on="source_family", index=["event_type", "horizon"], values="n")
    # the weak kinds still get feedback (fewer as the memory moves them down the contexts)
    assert n.height == 15 and n.select("news:opinion", "sec:10-Q").min_horizontal().min() >= 8
    # every (event type, horizon) cell puts the useful kind above the other one of its broad family
    assert (cells["news:wire"] > cells["news:opinion"]).all() and (cells["sec:8-K-2.02"] > cells["sec:10-Q"]).all()
    assert (cells["news:wire"] - cells["news:opinion"]).mean() > 0.15

    def useful_share(results, a, b):
        c = pl.concat([r.contexts for r in results[a:b]])
        return float(c["passage_id"].replace_strict(kind_of).is_in(USEFUL).mean())

    last = (len(DAYS) - 40, len(DAYS))
    first = (0, 10)
    f_first, f_last, b_last = useful_share(fine, *first), useful_share(fine, *last), useful_share(broad, *last)
    print(f"useful-kind share of the contexts: fine {f_first:.3f} -> {f_last:.3f}, broad {useful_share(broad, *first):.3f} -> {b_last:.3f}")
    # with pools this close the memory term moves the useful kinds up by more than 8 points
    assert f_last > f_first + 0.08 and f_last > b_last + 0.08
