import pytest

from finrag_dagster.core.tables import Lake
from finrag_dagster.pipeline import run_range
from tests.instance import pooled_instance

from .world import DECISION_START, END, build_world, files_settings


@pytest.fixture(scope="session")
def world_raw(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="session")
def small_lake(world_raw, tmp_path_factory):
    """The small world materialised through END (history from its start, decisions from DECISION_START)."""
    lake = Lake(tmp_path_factory.mktemp("lake_a"))
    settings = files_settings(world_raw, lake.root)
    with pooled_instance() as inst:
        results = run_range(settings, end=END, decision_start=DECISION_START, instance=inst)
    return lake, settings, results
