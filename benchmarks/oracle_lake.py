"""Build what the oracle benchmarks read, and nothing more: the stages up to the decisions
(sources, history, anchors, context cards, candidate pools, labels) over the settings' calendar.

    .venv/bin/python benchmarks/oracle_lake.py --config configs/oracle_publishers.toml
    .venv/bin/python benchmarks/reader_oracle.py --config configs/oracle_publishers.toml --split test

``benchmarks/reader_oracle.py`` re-runs the feedback loop in process over these tables, so the
loop's variant assets, the selection and the evaluation (what ``finrag demo`` adds) are not built
(the five-year oracle lake: 1,578 s on a 2-core machine shared with a CI run, docs/feedback_loop.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ONLY = ("synthetic_world", "universe", "prices", "news_raw", "filings_raw", "returns", "evidence", "anchors", "context_cards", "candidates", "labels")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="settings TOML (its lake_dir is where the lake goes)")
    ap.add_argument("--end", default="", help="last day (default: calendar.end)")
    args = ap.parse_args()

    import dagster as dg

    from finrag_dagster.core.settings import load_settings
    from finrag_dagster.pipeline import RunOptions, run_range

    s = load_settings(args.config)
    t0 = time.perf_counter()

    def on_stage(stage, names):
        print(f"[{time.perf_counter() - t0:6.0f} s] {stage.name}: {', '.join(names)}", flush=True)

    with dg.DagsterInstance.ephemeral() as inst:
        run_range(s, end=dt.date.fromisoformat(args.end) if args.end else None, instance=inst, only=ONLY, options=RunOptions(on_stage=on_stage))
    print(f"lake {s.lake_dir}: built in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
