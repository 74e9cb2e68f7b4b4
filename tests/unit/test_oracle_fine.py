"""The memory oracle on a snapshot of the finer families (memory.families = "fine"): publisher
classes against the truth rows world.publisher_utility plants, filing kinds against the broad filing
row, news:other and unplanted classes left out, a world without class rows a clear error."""

import polars as pl
import pytest

from finrag_dagster.core.evaluation.oracle import family_ordering, memory_terms, pairwise_concordance, planted_for

PLANTED = pl.DataFrame(
    {
        "source_family": ["news", "sec_filing", "news:wire", "news:opinion", "news:aggregator"] * 2,
        "event_type": ["Earnings & Guidance"] * 5 + ["Legal & Regulatory"] * 5,
        "horizon": ["1D"] * 10,
        "planted": [0.7, 0.45, 0.9, 0.55, 0.7, 0.6, 0.5, 0.8, 0.4, 0.6],
    }
)


def _snap(rows):
    return pl.DataFrame(rows, schema=["source_family", "event_type", "horizon", "n", "u_hat", "adjustment"], orient="row")


def test_planted_for_maps_filing_kinds_to_the_filing_row_and_leaves_news_other_out():
    snap = _snap(
        [
            ("news:wire", "Earnings & Guidance", "1D", 200.0, 0.8, 0.1),
            ("news:other", "Earnings & Guidance", "1D", 200.0, 0.6, 0.0),
            ("sec:8-K-2.02", "Earnings & Guidance", "1D", 200.0, 0.5, 0.0),
            ("sec:10-Q", "Earnings & Guidance", "1D", 200.0, 0.4, -0.1),
        ]
    )
    p = planted_for(snap, PLANTED).filter(pl.col("event_type") == "Earnings & Guidance")
    got = dict(zip(p["source_family"], p["planted"]))
    assert got == {"news:wire": 0.9, "sec:8-K-2.02": 0.45, "sec:10-Q": 0.45}


def test_fine_ordering_counts_every_pair_with_different_planted_utilities():
    e, lg = "Earnings & Guidance", "Legal & Regulatory"
    snap = _snap(
        [
            (*("news:wire", e, "1D"), 300.0, 0.85, 0.1),
            (*("news:opinion", e, "1D"), 300.0, 0.50, -0.1),
            (*("sec:8-K-2.02", e, "1D"), 150.0, 0.44, 0.0),
            (*("sec:10-Q", e, "1D"), 150.0, 0.40, 0.0),  # same planted as the 8-K: no pair between them
            (*("news:aggregator", e, "1D"), 50.0, 0.99, 0.2),  # n below min_n: not compared
            # Legal: wire (.8) learned below opinion (.4): out of order
            (*("news:wire", lg, "1D"), 200.0, 0.45, 0.0),
            (*("news:opinion", lg, "1D"), 200.0, 0.55, 0.0),
        ]
    )
    o = family_ordering(snap, PLANTED, min_n=100)
    rows = {r["event_type"]: r for r in o.iter_rows(named=True)}
    # Earnings: wire>opinion, wire>8-K, wire>10-Q, opinion>8-K, opinion>10-Q (planted .55 > .45; û .50 > .44, .40)
    assert rows[e]["pairs"] == 5 and rows[e]["pairs_in_order"] == 5 and rows[e]["agree"]
    assert rows[e]["families"] == "news:opinion,news:wire,sec:10-Q,sec:8-K-2.02"
    assert rows[lg]["pairs"] == 1 and rows[lg]["pairs_in_order"] == 0 and not rows[lg]["agree"]
    share, pairs = pairwise_concordance(snap, PLANTED, min_n=100)
    assert pairs > 6 and 0 < share < 1
    terms = memory_terms(snap, 0.3)
    assert "news_minus_sec" not in terms.columns and abs(terms.filter(pl.col("event_type") == e)["news:wire"][0] - 0.03) < 1e-12


def test_a_fine_snapshot_against_a_world_without_class_rows_is_a_clear_error():
    snap = _snap([("news:wire", "Earnings & Guidance", "1D", 200.0, 0.8, 0.1), ("sec:10-Q", "Earnings & Guidance", "1D", 200.0, 0.4, 0.0)])
    broad_truth = PLANTED.filter(pl.col("source_family").is_in(["news", "sec_filing"]))
    with pytest.raises(ValueError, match="world.publisher_utility"):
        family_ordering(snap, broad_truth)


def test_seed000_snapshots_keep_the_two_family_comparison():
    snap = _snap([("news", "Earnings & Guidance", "1D", 200.0, 0.7, 0.1), ("sec_filing", "Earnings & Guidance", "1D", 200.0, 0.5, -0.1)])
    o = family_ordering(snap, PLANTED, min_n=100)
    assert o.columns[:4] == ["event_type", "horizon", "n_news", "n_sec"] and o["agree"].to_list() == [True]
    assert memory_terms(snap, 0.3)["news_minus_sec"][0] == pytest.approx(0.06)
