"""The daily loop does not depend on the matured_feedback sensor winning a race: a labels
partition written before its horizons matured is recomputed from the prices now in the lake."""

import pyarrow as pa
import pyarrow.parquet as pq
from polars.testing import assert_frame_equal

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.loop_io import labels_reader

from .world import END


def test_a_stale_pending_partition_reads_as_the_matured_one(small_lake):
    lake, settings, _ = small_lake
    cal = nyse()
    d = cal.offset(END.isoformat(), -8).isoformat()  # every horizon matured before END
    path = lake.path("labels", date=d)
    original = path.read_bytes()
    truth = lake.read("labels", dates=[d])
    assert truth.height and (truth["status"] == "ok").any() and not (truth["status"] == "pending").any()
    stale = pq.read_table(path).to_pandas()
    stale["status"] = "pending"  # as written on d itself, before close(d+h)
    stale[["y", "z"]] = None
    try:
        pq.write_table(pa.Table.from_pandas(stale, schema=pq.read_schema(path), preserve_index=False), path)
        assert (lake.read("labels", dates=[d])["status"] == "pending").all()
        got = labels_reader(lake, cal, settings)(d)
        assert_frame_equal(got.select(truth.columns), truth)
        # a partition that is complete is read as it is, not recomputed
        other = cal.offset(d, -1).isoformat()
        assert_frame_equal(labels_reader(lake, cal, settings)(other), lake.read("labels", dates=[other]))
        # a partition not materialised yet (a backfill that runs the loop before `labels`) reads the same
        path.unlink()
        assert_frame_equal(labels_reader(lake, cal, settings)(d).select(truth.columns), truth)
    finally:
        path.write_bytes(original)
