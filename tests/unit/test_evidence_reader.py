"""The evidence reader: its answer follows the context it is shown (place, topic, stance), not the
passages' age, and it cites what drove the answer, including passages that disagree with the anchor."""

import json

import jsonschema
import pytest

from finrag_dagster.core.reader.backends import BackendConfig, EmbeddedBackend, Request
from finrag_dagster.core.reader.embedded import EvidenceRules, ReaderInput, read, read_evidence, topic_words
from finrag_dagster.core.reader.parse import parse_output
from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt

HEADLINE = "Vertex Reaches Settlement in Patent Case with Regulators"  # no sentiment word: the evidence decides
DAY = "2021-03-02"


def item(pid, family, text, when="2021-03-01T21:00:00+00:00", title=""):
    return EvidenceItem(pid, family, title or f"Vertex patent case settlement {pid}", text, when)


GOOD_NEWS = "The patent case settlement improved the outlook; analysts see strong growth and a favorable ruling."
BAD_FILING = "Item 8.01. The patent case settlement carries an adverse penalty, losses and an impairment; weak demand."


def answer(evidence, headline=HEADLINE, rules=EvidenceRules(), risk="normal", company="Vertex Pharmaceuticals"):
    ids = [("N" if e.source_family == "news" else "F") + str(i + 1) for i, e in enumerate(evidence)]
    inp = ReaderInput(headline, "", "Legal & Regulatory", tuple(zip(ids, evidence)), risk, DAY, (), company)
    raw = read_evidence(inp, rules)
    return json.loads(raw)["signals"], raw, ids


def test_the_answer_is_deterministic_and_schema_valid():
    ev = [item("p1", "news", GOOD_NEWS), item("p2", "sec_filing", BAD_FILING)]
    _, raw, ids = answer(ev)
    assert raw == answer(ev)[1]
    a = AnchorInfo("a", "VRTX", "Vertex Pharmaceuticals", HEADLINE, "", DAY, "Legal & Regulatory", "after_close")
    p = build_prompt(a, ev, "card")
    jsonschema.validate(json.loads(raw), p.schema)
    assert all(h.ok for h in parse_output(raw, p.allowed_ids).horizons.values())


def test_the_evidence_decides_when_the_anchor_is_silent_and_flipping_it_flips_the_answer():
    up, _, _ = answer([item("p1", "news", GOOD_NEWS)])
    down, _, _ = answer([item("p1", "news", BAD_FILING.replace("Item 8.01. ", ""))])
    assert up["1D"]["signal"] == 1 and down["1D"]["signal"] == -1
    assert up["1D"]["ids"] == ["N1"] and down["1D"]["ids"] == ["N1"]


def test_the_place_in_the_context_decides_between_disagreeing_passages():
    good, bad = item("p1", "news", GOOD_NEWS), item("p2", "news", BAD_FILING.replace("Item 8.01. ", ""))
    rules = EvidenceRules(threshold=0.1)  # equal and opposite passages: only their places differ
    first_good, _, _ = answer([good, bad], rules=rules)
    first_bad, _, _ = answer([bad, good], rules=rules)
    assert first_good["1D"]["signal"] == 1 and first_bad["1D"]["signal"] == -1
    assert first_good["1D"]["ids"][0] == "N1" and first_bad["1D"]["ids"][0] == "N1"


def test_a_filing_that_disagrees_with_the_anchor_drives_and_is_cited_when_it_dominates():
    # the anchor is mildly positive, the first passage a strongly negative filing: at 5D (filings weigh most) the filing wins
    sig, _, _ = answer([item("p1", "sec_filing", BAD_FILING)], headline="Vertex Settlement Brings Progress in Patent Case")
    assert sig["5D"]["signal"] == -1 and sig["5D"]["ids"] == ["F1"]


def test_age_does_not_discount_a_passage_on_the_same_topic():
    fresh, _, _ = answer([item("p1", "news", GOOD_NEWS, when="2021-03-01T21:00:00+00:00")])
    old, _, _ = answer([item("p1", "news", GOOD_NEWS, when="2021-01-15T21:00:00+00:00")])
    assert fresh == old  # the anchor-tone reader halves a passage every two days; this one reads it as written
    anchor_tone = json.loads(
        read(
            ReaderInput(HEADLINE, "", "Legal & Regulatory", (("N1", item("p1", "news", GOOD_NEWS, when="2021-01-15T21:00:00+00:00")),), "normal", DAY)
        )
    )
    assert anchor_tone["signals"]["1D"]["signal"] == 0  # ... and so answers neutral: the difference is real


def test_an_off_topic_passage_weighs_less_than_one_on_the_anchors_topic():
    on = item("p1", "news", GOOD_NEWS)
    off = item("p2", "news", "Quarterly dividend declared; cafeteria menus improved, strong coffee and favorable parking.", title="Vertex dividend")
    assert topic_words(f"{off.title}. {off.text}", "Vertex Pharmaceuticals").isdisjoint(topic_words(HEADLINE, "Vertex Pharmaceuticals"))
    rules = EvidenceRules(threshold=0.0)
    on_sig, raw_on, _ = answer([on], rules=rules)
    off_sig, raw_off, _ = answer([off], rules=rules)
    score = lambda raw: float(json.loads(raw)["signals"]["1D"]["reason"].split("evidence ")[1].split(",")[0])  # noqa: E731
    assert score(raw_off) == pytest.approx(score(raw_on) * rules.topic_floor, rel=0.35)
    assert 0 < score(raw_off) < score(raw_on)


def test_only_the_anchor_supporting_the_answer_means_no_citation():
    # a strongly positive anchor over neutral, on-topic evidence: the answer is the anchor's, nothing is cited
    neutral = item("p1", "news", "Vertex patent case settlement terms were filed with the court on Monday.")
    sig, _, _ = answer([neutral], headline="Vertex Beats Estimates, Raises Guidance on Record Growth, Strong Demand Surges")
    assert sig["1D"]["signal"] == 1 and sig["1D"]["ids"] == []
    assert "anchor alone" in sig["1D"]["reason"]


def test_a_neutral_answer_cites_the_most_on_topic_passage_without_tone():
    neutral = item("p1", "news", "Vertex patent case settlement terms were filed with the court on Monday.")
    sig, _, _ = answer([neutral])
    assert sig["1D"] == {"signal": 0, "ids": ["N1"], "reason": sig["1D"]["reason"]}


def test_the_embedded_readers_are_chosen_by_name_and_have_distinct_model_ids():
    ev = [item("p1", "news", GOOD_NEWS)]
    inp = ReaderInput(HEADLINE, "", "Legal & Regulatory", (("N1", ev[0]),), "normal", DAY, (), "Vertex")
    a = AnchorInfo("a", "VRTX", "Vertex", HEADLINE, "", DAY, "Legal & Regulatory", "after_close")
    req = Request(build_prompt(a, ev, "card"), inp)
    evid = EmbeddedBackend(BackendConfig(embedded="evidence"))
    tone_ = EmbeddedBackend(BackendConfig(embedded="anchor_tone"))
    assert evid.model.startswith("finrag-embedded-evidence-") and tone_.model.startswith("finrag-embedded-lm-rules-")
    assert evid.generate([req])[0].text == read_evidence(inp) and tone_.generate([req])[0].text == read(inp)
    with pytest.raises(ValueError, match="unknown embedded reader"):
        EmbeddedBackend(BackendConfig(embedded="oracle"))


def test_an_experience_principle_weighs_the_anchor_term_per_horizon():
    inp = ReaderInput("Vertex Beats Estimates, Raises Guidance on Record Growth", "", "Earnings & Guidance", (), "normal", DAY)
    plain = json.loads(read_evidence(inp))["signals"]
    off = json.loads(read_evidence(ReaderInput(inp.headline, "", inp.event_type, (), "normal", DAY, (0.0, 1.0, 2.0))))["signals"]
    assert plain["1D"]["signal"] == 1 and off["1D"]["signal"] == 0
    with pytest.raises(ValueError, match="one weight per horizon"):
        read_evidence(ReaderInput(inp.headline, "", inp.event_type, (), "normal", DAY, (1.0,)))
