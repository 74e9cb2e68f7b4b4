"""Memory and time of the CSV checks every news file passes before it is loaded, streamed vs whole-file.

    .venv/bin/python benchmarks/csv_checks.py --gb 1

Writes an FNSPID-shaped CSV of about ``--gb`` GB (quoted titles with commas, ~1.2 kB article
bodies) and runs, each in a fresh process: the streamed checks the loaders use (``csv_problem``:
strict RFC 4180 parse and NUL scan; ``is_utf8``; ``file_rows``: the independent row count of the
``rows_reconcile`` check) and the whole-file baseline they replaced (``read_bytes`` + decode +
``csv.reader`` over a ``StringIO``). Prints wall time and peak RSS of each, and the ratios.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STREAMED = """
from pathlib import Path
from finrag_dagster.sources.csvcheck import csv_problem, is_utf8
from finrag_dagster.sources.rowcount import file_rows
p = Path({path!r})
print(csv_problem(p), is_utf8(p), file_rows(p))
"""

WHOLE_FILE = """
import csv, io
from pathlib import Path
p = Path({path!r})
data = p.read_bytes()
ok = True
try:
    data.decode("utf-8")
except UnicodeDecodeError:
    ok = False
text = data.decode("utf-8", errors="replace")
assert "\\x00" not in text
rows = sum(1 for _ in csv.reader(io.StringIO(text, newline=""), strict=True)) - 1
print(None, ok, rows)
"""


def write_csv(path: Path, gb: float) -> None:
    row = (
        '2021-03-01 00:00:00 UTC,"Apple Beats Estimates, Raises Guidance",AAPL,https://example.com/a,Pub,Auth,"'
        + "Revenue grew strongly in the quarter, the company said. " * 22
        + '"\n'
    )
    block = row * 10_000
    with open(path, "w", encoding="utf-8") as f:
        f.write("Date,Article_title,Stock_symbol,Url,Publisher,Author,Article\n")
        for _ in range(int(gb * 1e9 // len(block)) + 1):
            f.write(block)


def run(code: str) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MiB of the child, its output) for one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # max over children so far: run the small one first
    return wall, max(peak, before) // 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fnspid_news.csv"
        write_csv(path, args.gb)
        size = path.stat().st_size / 1e9
        s_wall, s_rss, s_out = run(STREAMED.format(path=str(path)))  # streamed first: ru_maxrss only grows
        w_wall, w_rss, w_out = run(WHOLE_FILE.format(path=str(path)))
        print(f"file: {size:.2f} GB")
        print(f"streamed checks   : {s_wall:6.1f} s, peak RSS {s_rss:6d} MiB  -> {s_out}")
        print(f"whole-file baseline: {w_wall:6.1f} s, peak RSS {w_rss:6d} MiB  -> {w_out}")
        print(f"ratio (baseline / streamed): time {w_wall / s_wall:.2f}x, peak RSS {w_rss / max(1, s_rss):.1f}x")


if __name__ == "__main__":
    main()
