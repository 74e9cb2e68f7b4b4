"""The asset graph as the Dagster daemon sees it: no cycle but each state's dependency on its own
previous partition (a cycle made every UI backfill hang and the Lineage page refuse to draw), and
decision-day assets partitioned from the first decision day."""

import datetime as dt

import dagster as dg
import networkx as nx
import pytest

from finrag_dagster.core.settings import Settings
from finrag_dagster.definitions import build_definitions

ALL_FAMILIES = ["no_memory", "source_memory", "top5_all_source", "shuffled_labels", "shuffled_event_types", "toe", "source_memory_toe"]


def _defs(families=ALL_FAMILIES) -> dg.Definitions:
    s = Settings(calendar={"start": dt.date(2017, 10, 2), "end": dt.date(2019, 12, 31), "decision_start": dt.date(2019, 1, 2)},
                 variants={"families": families})
    return build_definitions(s)


def _graph(defs: dg.Definitions) -> nx.DiGraph:
    ag = defs.resolve_asset_graph()
    g = nx.DiGraph()
    for k in ag.get_all_asset_keys():
        g.add_node(k.to_user_string())
        for p in ag.get(k).parent_keys:
            if p != k:
                g.add_edge(p.to_user_string(), k.to_user_string())
    return g


def test_no_cycle_but_self_dependencies():
    defs = _defs()
    assert list(nx.simple_cycles(_graph(defs))) == []
    # what the backfill daemon and the Lineage page do with the graph: a topological order
    levels = defs.resolve_asset_graph().toposorted_asset_keys_by_level
    assert sum(len(x) for x in levels) == len(list(defs.resolve_asset_graph().get_all_asset_keys()))


def test_the_check_catches_a_cycle_between_two_assets():
    """The guard above is only as good as the cycle it is shown to catch."""

    @dg.asset(deps=["b"])
    def a() -> None: ...

    @dg.asset(deps=["a"])
    def b() -> None: ...

    assert list(nx.simple_cycles(_graph(dg.Definitions(assets=[a, b]))))


def test_state_assets_carry_their_own_previous_partition_and_contexts_read_todays_state():
    ag = _defs().resolve_asset_graph()
    key = dg.AssetKey.from_user_string
    for fam in ("source_memory_toe", "source_memory"):
        snap = ag.get(key(f"{fam}/memory_snapshot"))
        assert key(f"{fam}/memory_snapshot") in snap.parent_keys  # D-1 -> D
        assert key(f"{fam}/experience_tree") not in snap.parent_keys  # the cycle that hung backfills
        assert key(f"{fam}/memory_snapshot") in ag.get(key(f"{fam}/contexts")).parent_keys
    tree = ag.get(key("source_memory_toe/experience_tree"))
    assert key("source_memory_toe/memory_snapshot") not in tree.parent_keys
    assert key("source_memory_toe/experience_tree") in ag.get(key("source_memory_toe/reader_outputs")).parent_keys


def test_decision_assets_start_on_the_first_decision_day_history_on_the_first_price_day():
    ag = _defs().resolve_asset_graph()
    first = lambda k: ag.get(dg.AssetKey.from_user_string(k)).partitions_def.get_first_partition_key()  # noqa: E731
    for k in ("prices", "news_raw", "filings_raw", "evidence", "returns"):
        assert first(k) == "2017-10-02", k
    for k in ("anchors", "context_cards", "candidates", "labels", "experience_tree", "source_memory/memory_snapshot",
              "no_memory/reader_outputs", "toe/experience_tree", "source_memory/feedback", "stock_day_signals"):
        assert first(k) == "2019-01-02", k


@pytest.mark.parametrize("job,member,outsider", [("finrag_ingest", "evidence", "anchors"), ("finrag_daily", "anchors", "evidence")])
def test_the_two_daily_jobs_split_by_partitions(job, member, outsider):
    defs = _defs(["no_memory", "source_memory"])
    keys = {k.to_user_string() for k in defs.resolve_job_def(job).asset_layer.executable_asset_keys}
    assert member in keys and outsider not in keys
