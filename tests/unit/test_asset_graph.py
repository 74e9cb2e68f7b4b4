"""The asset graph as the Dagster daemon sees it: no cycle but each state's dependency on its own
previous partition (a cycle made every UI backfill hang and the Lineage page refuse to draw), and
decision-day assets partitioned from the first decision day."""

import datetime as dt

import dagster as dg
import networkx as nx
import pytest

from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.build import build_definitions

ALL_FAMILIES = ["no_memory", "source_memory", "top5_all_source", "shuffled_labels", "shuffled_event_types", "toe", "source_memory_toe"]


def _defs(families=ALL_FAMILIES) -> dg.Definitions:
    s = Settings(
        calendar={"start": dt.date(2017, 10, 2), "end": dt.date(2019, 12, 31), "decision_start": dt.date(2019, 1, 2)}, variants={"families": families}
    )
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
        # every output of the family reads the same day's inputs, so a backfill reaches them alike
        common = {key(k) for k in ("candidates", "anchors", "context_cards", "evidence")}
        assert common <= snap.parent_keys and common <= ag.get(key(f"{fam}/contexts")).parent_keys
    tree = ag.get(key("source_memory_toe/experience_tree"))
    assert key("source_memory_toe/memory_snapshot") not in tree.parent_keys
    assert key("source_memory_toe/experience_tree") in tree.parent_keys


def test_decision_assets_start_on_the_first_decision_day_history_on_the_first_price_day():
    ag = _defs().resolve_asset_graph()
    first = lambda k: ag.get(dg.AssetKey.from_user_string(k)).partitions_def.get_first_partition_key()  # noqa: E731
    for k in ("prices", "news_raw", "filings_raw", "evidence", "returns"):
        assert first(k) == "2017-10-02", k
    for k in (
        "anchors",
        "context_cards",
        "candidates",
        "labels",
        "experience_tree",
        "source_memory/memory_snapshot",
        "no_memory/reader_outputs",
        "toe/experience_tree",
        "source_memory/feedback",
        "stock_day_signals",
    ):
        assert first(k) == "2019-01-02", k


@pytest.mark.parametrize("job,member,outsider", [("finrag_ingest", "evidence", "anchors"), ("finrag_daily", "anchors", "evidence")])
def test_the_two_daily_jobs_split_by_partitions(job, member, outsider):
    defs = _defs(["no_memory", "source_memory"])
    keys = {k.to_user_string() for k in defs.resolve_job_def(job).asset_layer.executable_asset_keys}
    assert member in keys and outsider not in keys


def test_a_backfill_of_a_range_targets_exactly_that_range():
    """What the UI's launchPartitionBackfill computes: no asset of a non-subsettable multi-asset may
    get other partitions than its siblings, and no selected day range may grow (a lagged partition
    mapping from labels into the memory once made it reach six days past the chosen range)."""
    from dagster._core.execution.asset_backfill import AssetBackfillData

    defs = _defs(["no_memory", "source_memory", "source_memory_toe"])
    ag = defs.resolve_asset_graph()
    days = ["2019-02-01", "2019-02-04", "2019-02-05", "2019-02-06", "2019-02-07", "2019-02-08"]
    sel = [k for k in ag.get_all_asset_keys() if ag.get(k).is_partitioned and ag.get(k).partitions_def.get_first_partition_key() == "2019-01-02"]
    assert dg.AssetKey(["source_memory_toe", "memory_snapshot"]) in sel
    data = AssetBackfillData.from_asset_partitions(
        asset_graph=ag,
        partition_names=days,
        asset_selection=sel,
        dynamic_partitions_store=dg.DagsterInstance.ephemeral(),
        all_partitions=False,
        backfill_start_timestamp=1.7e9,
    )
    for k in sel:
        assert sorted(data.target_subset.get_partitions_subset(k).get_partition_keys()) == days, k


REPO_PY = """
import datetime as dt
from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.build import build_definitions
defs = build_definitions(Settings(calendar={"start": dt.date(2017, 10, 2), "end": dt.date(2019, 12, 31), "decision_start": dt.date(2019, 1, 2)},
                                  variants={"families": ["no_memory", "source_memory", "source_memory_toe"]}))
"""


@pytest.fixture(scope="module")
def gql_context(tmp_path_factory):
    """The webserver's GraphQL schema over a real code server (what the UI talks to), no daemon."""
    from dagster_graphql.test.utils import define_out_of_process_context

    f = tmp_path_factory.mktemp("repo") / "repo.py"
    f.write_text(REPO_PY)
    with dg.instance_for_test() as inst, define_out_of_process_context(str(f), "defs", inst) as ctx:
        yield ctx


FAMILY = ["source_memory_toe/memory_snapshot", "source_memory_toe/experience_tree", "source_memory_toe/contexts", "source_memory_toe/reader_outputs"]
DECISIONS = [
    "anchors",
    "context_cards",
    "candidates",
    "labels",
    "experience_tree",
    *FAMILY,
    "source_memory/memory_snapshot",
    "source_memory/contexts",
    "source_memory/reader_outputs",
    "source_memory/feedback",
    "no_memory/contexts",
    "no_memory/reader_outputs",
    "no_memory/feedback",
    "source_memory_toe/feedback",
    "stock_day_signals",
]


@pytest.mark.parametrize(
    "selection",
    [
        FAMILY,  # one family's loop
        ["candidates", "labels", *FAMILY, "source_memory_toe/feedback"],  # pools, labels and a loop
        DECISIONS,  # every decision-day asset
        ["prices", "news_raw", "filings_raw", "returns", "evidence", *DECISIONS],  # every daily asset, history included
    ],
    ids=["one-loop", "pools-and-loop", "decisions", "everything-daily"],
)
def test_the_ui_launches_a_range_backfill_of_any_selection(gql_context, selection):
    from dagster_graphql.test.utils import execute_dagster_graphql

    days = ["2019-02-01", "2019-02-04", "2019-02-05"]
    q = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
             __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
    r = execute_dagster_graphql(gql_context, q, {"p": {"partitionNames": days, "assetSelection": [{"path": k.split("/")} for k in selection]}})
    res = r.data["launchPartitionBackfill"]
    assert res["__typename"] == "LaunchBackfillSuccess", res.get("message")
    bf = gql_context.instance.get_backfill(res["backfillId"])
    target = bf.asset_backfill_data.target_subset
    for k in selection:  # exactly the chosen days, for every selected asset
        assert sorted(target.get_partitions_subset(dg.AssetKey.from_user_string(k)).get_partition_keys()) == days, k
