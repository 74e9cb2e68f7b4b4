"""Cold CLI commands: `finrag --help`, `finrag status` and `finrag search`, each a fresh process.

    .venv/bin/python benchmarks/cold_cli.py --lake .benchmarks/real_lake --as-of 2023-06-30 \
        --query "Intel CEO change" --repeat 5

Every command is started as a new process (what a user typing it gets: imports, model load, lake
read, answer), `--repeat` times, alternating between the commands so a slower moment of the machine
slows each alike; printed: median and min wall seconds per command. The baseline, timed in the
same run, is the same `finrag search` with the query embedded by the torch encoder
(sentence-transformers' `SentenceTransformer.encode` through `core.embeddings.embed`, which is what
`finrag search` did before its NumPy query encoder): its ratio to the current search is the cold
start the NumPy encoder removes. The search's results are the same either way
(tests/unit/test_query_encoder.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FINRAG = Path(sys.executable).with_name("finrag")

# the search with the torch encoder: the engine's query encoder replaced before the CLI runs
TORCH_SEARCH = """
import sys
import numpy as np
import finrag_dagster.core.retrieval.engine as engine
from finrag_dagster.core.embeddings import embed

def torch_encode(texts, *a, **k):
    return np.asarray(embed(list(texts)), dtype=np.float32)

engine.encode_queries = torch_encode
from finrag_dagster.cli import main
sys.argv = ["finrag", *sys.argv[1:]]
main()
"""


def commands(lake: str, query: str, as_of: str) -> dict[str, list[str]]:
    search = ["search", query, "--lake", lake, "--as-of", as_of, "--k", "5", "--no-context"]
    return {
        "finrag --help": [str(FINRAG), "--help"],
        "finrag status": [str(FINRAG), "status", "--lake", lake],
        "finrag search": [str(FINRAG), *search],
        "search, torch query encoder (baseline)": [sys.executable, "-c", TORCH_SEARCH, *search],
    }


def time_once(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    secs = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... exited {res.returncode}:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return secs, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", required=True, help="a lake with evidence (e.g. the real-sample lake)")
    ap.add_argument("--query", default="Intel CEO change")
    ap.add_argument("--as-of", default="2023-06-30")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmds = commands(args.lake, args.query, args.as_of)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    outputs: dict[str, str] = {}
    for _ in range(args.repeat):
        for name, cmd in cmds.items():
            secs, out = time_once(cmd, env)
            times[name].append(secs)
            outputs[name] = out
    same = outputs["finrag search"] == outputs["search, torch query encoder (baseline)"]
    print(f"{'command':42s} {'median s':>9s} {'min s':>7s}   ({args.repeat} cold processes each)")
    for name, ts in times.items():
        print(f"{name:42s} {statistics.median(ts):9.2f} {min(ts):7.2f}")
    base, cur = statistics.median(times["search, torch query encoder (baseline)"]), statistics.median(times["finrag search"])
    print(f"cold search: baseline / current = {base / cur:.1f}x; the two printed the same results: {same}")


if __name__ == "__main__":
    main()
