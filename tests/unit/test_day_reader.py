"""family_feedback reads a block of days in one scan: each day's frame is the one a per-day read gives."""

import datetime as dt

import polars as pl
import pyarrow as pa

from finrag_dagster.core.loop_io import _day_reader, _drop_hive
from finrag_dagster.core.storage.schemas import TableSpec
from finrag_dagster.core.tables import Lake

SPEC = TableSpec(
    "outs",
    pa.schema([pa.field("anchor_id", pa.string(), False), pa.field("signal", pa.int8(), False), pa.field("ids", pa.list_(pa.string()), True)]),
    ("variant", "date"),
    ("anchor_id",),
)


def test_a_block_read_gives_each_day_the_frame_of_its_own_read(tmp_path):
    lake = Lake(tmp_path, {"outs": SPEC})
    days = ["2019-01-02", "2019-01-03", "2019-01-04", "2019-01-07"]
    for v, shift in (("a", 0), ("b", 1)):
        for i, d in enumerate(days[:3]):  # 2019-01-07 has no partition
            n = i + shift  # variant a's first day is an empty partition
            df = pl.DataFrame({"anchor_id": [f"{v}{d}{k}" for k in range(n)], "signal": [k % 3 - 1 for k in range(n)], "ids": [[d]] * n})
            lake.write("outs", df.cast({"signal": pl.Int8, "ids": pl.List(pl.String)}), variant=v, date=d)
    for hive in (False, True):
        of = _day_reader(lake, "outs", days + days[:1], hive=hive, variant="a")  # a day named twice is read once
        for d in days:
            alone = lake.read("outs", dates=[d], variant="a")
            alone = alone if hive else _drop_hive(alone)
            got = of(d)
            assert got.schema == alone.schema and got.equals(alone), (hive, d)
        assert of("2019-01-04")["anchor_id"].to_list() == ["a2019-01-040", "a2019-01-041"]
        assert of("2019-01-07").height == 0 and of("2019-01-02").height == 0
        if hive:
            assert of("2019-01-03")["date"].to_list() == [dt.date(2019, 1, 3)]
