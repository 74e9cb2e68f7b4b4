"""world.publisher_utility: the embedded world plants distinct source utilities per news publisher
class (the fine families of memory.families = "fine"), its truth file says which, and the default
world is the world of before the setting."""

import json

import polars as pl
import pytest

from finrag_dagster.core.memory.families import load_publisher_classes
from finrag_dagster.core.settings import WorldSettings
from finrag_dagster.sources.synthetic import params as P
from finrag_dagster.sources.synthetic.text import PUBLISHERS
from finrag_dagster.sources.synthetic.world import _settings_doc, build_world, documents_table, utility_table


def test_class_reliability_by_bayes_and_the_classes_match_the_shipped_mapping_file():
    for c, tp in P.TYPE_PARAMS.items():
        assert P.class_reliability("aggregator", tp.rho_news) == pytest.approx(tp.rho_news)
        assert P.class_reliability("wire", tp.rho_news) > tp.rho_news > P.class_reliability("opinion", tp.rho_news)
        for h in P.HORIZONS:
            assert P.planted_class_utility("aggregator", c, h) == pytest.approx(P.planted_utility("news", c, h))
    shipped = load_publisher_classes()
    assert {name: shipped[name.lower()] for name, _ in PUBLISHERS} == P.PUBLISHER_CLASS


def test_the_world_plants_utilities_per_publisher_class_and_its_truth_file_says_which():
    w = build_world(WorldSettings(n_tickers=12, publisher_utility=True))
    u = pl.from_arrow(utility_table(w, documents_table(w), True))
    assert sorted(u["source_family"].unique()) == ["news", "news:aggregator", "news:opinion", "news:wire", "sec_filing"]
    fine = u.filter(pl.col("source_family").str.starts_with("news:"))
    assert fine.height == 3 * 5 * 3 and fine["n_docs"].min() >= 40
    # the empirical rates follow the planted ones; a higher reliability about d_short is a higher
    # utility wherever the horizon's direction mostly follows d_short (not for every 5D cell)
    assert (fine["empirical_rate"] - fine["planted_prob"]).abs().mean() < 0.04
    wide = fine.pivot(on="source_family", index=["event_type", "horizon"], values=["planted_prob", "empirical_rate"])
    planted_up = wide["planted_prob_news:wire"] > wide["planted_prob_news:opinion"]
    assert planted_up.sum() >= 13 and planted_up.head(2).all()  # Earnings 1D and 3D among them
    assert ((wide["empirical_rate_news:wire"] > wide["empirical_rate_news:opinion"]) == planted_up).sum() >= 14
    # the broad news rows stay the paper's utility (the class draw does not change a tone)
    news = u.filter(pl.col("source_family") == "news")
    assert (news["empirical_rate"] - news["planted_prob"]).abs().mean() < 0.04


def test_the_default_world_records_no_new_setting_and_no_class_rows():
    s = WorldSettings(n_tickers=3)
    assert not s.publisher_utility and "publisher_utility" not in _settings_doc(s)
    assert _settings_doc(s.model_copy(update={"publisher_utility": True}))["publisher_utility"] is True
    assert json.dumps(_settings_doc(s), sort_keys=True)  # serialisable as world.json writes it


def test_the_default_world_stamp_is_the_stamp_of_before_the_setting():
    from finrag_dagster.sources.synthetic.world import settings_stamp

    s = WorldSettings()
    before = json.dumps({k: v for k, v in s.model_dump(mode="json").items() if k != "publisher_utility"}, sort_keys=True)
    assert settings_stamp(s) == before  # an existing lake's world is reused, not rebuilt
    assert settings_stamp(s.model_copy(update={"publisher_utility": True})) != before
