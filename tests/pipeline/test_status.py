"""`finrag status` on a materialised lake: the last days, the pending horizons and when they mature."""

import json
import os
import subprocess
import sys

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.status import lake_status

from .world import END


def test_status_reports_the_lake_as_it_is(small_lake, tmp_path):
    lake, settings, _ = small_lake
    cal = nyse()
    st = lake_status(lake, "QQQ", settings.variants.families)
    assert st.last_decision_day["anchors"] == END.isoformat()
    assert st.last_decision_day["source_memory/reader_outputs"] == END.isoformat()
    assert st.last_market_day == lake.materialized_dates("prices")[-1]
    by_h = {p["horizon"]: p for p in st.pending}
    # the history stage's prices end at END, so the last h decision days wait for close(D+h)
    assert set(by_h) == {"1D", "3D", "5D"}
    for h in (1, 3, 5):
        p = by_h[f"{h}D"]
        assert p["decision_days"] == h and p["last_day"] == END.isoformat()
        assert p["first_maturity"] == cal.offset(END.isoformat(), 1).isoformat()
    assert st.next_maturity == cal.offset(END.isoformat(), 1).isoformat()

    cfg = tmp_path / "s.json"
    cfg.write_text(settings.model_dump_json())
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "nohome")}
    r = subprocess.run(
        [sys.executable, "-m", "finrag_dagster.cli", "status", "--config", str(cfg), "--json"], capture_output=True, text=True, timeout=180, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert out["last_decision_day"]["anchors"] == END.isoformat() and out["sensors"] == []
