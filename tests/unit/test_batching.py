"""A range run and a day-by-day run of the same days give the same anchors: each day's
near-duplicate rule sees its own look-back, not one tied to the run's first day."""

import datetime as dt

import polars as pl

from finrag_dagster.core.anchors import AnchorUniverse, anchors_for_days
from finrag_dagster.core.calendar import lookback_days, nyse

cal = nyse()
START = dt.date(2019, 1, 2)
LOOKBACK = 10


def test_a_cluster_root_older_than_the_day_s_look_back_does_not_decide_its_anchors():
    days = [d.isoformat() for d in cal.sessions_in_range("2019-02-01", "2019-03-01")]
    d_last = days[-1]
    root_day = dt.date.fromisoformat(days[0])  # 19 sessions before the last day: outside its 10-session look-back
    t = cal.open_time(d_last).to_pydatetime() + dt.timedelta(hours=1)
    news = pl.DataFrame(
        {
            "news_id": ["N"],
            "ticker": ["AAA"],
            "public_time": [t],
            "time_precision": ["second"],
            "title": ["Aaa wins a contract"],
            "summary": ["s"],
            "url": ["u"],
            "date": [dt.date.fromisoformat(d_last)],
        },
        schema_overrides={"public_time": pl.Datetime("us", "UTC")},
    )
    # N joined, through a chain of re-reports, the cluster that R (an AAA item of the range's first day) rooted
    clusters = pl.DataFrame(
        {"passage_id": ["R", "N"], "ticker": ["AAA", "AAA"], "dup_cluster": ["R", "R"], "date": [root_day, dt.date.fromisoformat(d_last)]}
    )
    args = (cal, AnchorUniverse({"QQQ"}, {"AAA": "IT"}), LOOKBACK, START)
    # the range run reads clusters over its first day's look-back plus every day of the range
    ranged = anchors_for_days(news, clusters, days, *args)[d_last][0]
    # the day-by-day run of the last day reads only that day's look-back
    own = [dt.date.fromisoformat(x) for x in lookback_days(cal, d_last, LOOKBACK, START) + [d_last]]
    single = anchors_for_days(news, clusters.filter(pl.col("date").is_in(own)), [d_last], *args)[d_last][0]
    assert single["anchor_id"].to_list() == ["N"]
    assert ranged.equals(single)
