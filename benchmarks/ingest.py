"""Streaming news ingest on a multi-gigabyte FNSPID-format CSV: throughput, peak memory, re-runs.

    .venv/bin/python benchmarks/ingest.py --gb 5

Writes an FNSPID-shaped CSV of about ``--gb`` GB (the original eleven column names, ~3 kB article
bodies, some spanning lines, quoted commas and quotes; 89 universe tickers among 4,000, rows
from 2017-10 to 2023-12) and measures, each in a fresh process whose own peak RSS is reported:

1. the streaming loader (``stage_news``: CSV checks, lazy scan with the universe filter, batched
   checks and shaping, month files) over the whole file;
2. a re-run with nothing new (fingerprints only), and a re-run after ``--append-mb`` MB of new
   rows land at the end of the file (only those are read);
3. the baseline, a whole-file ``polars.read_csv`` followed by the same universe filter (the first
   step of a loader that holds the file in memory), and the streaming loader again, both on a
   prefix of ``--baseline-gb`` GB: the largest file the baseline is asked to hold.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from finrag_dagster.sources.news import FNSPID_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
UNIVERSE = [f"U{i:03d}" for i in range(89)]
OTHERS = [f"X{i:04d}" for i in range(3911)]
COLUMNS = list(FNSPID_COLUMNS)  # the news file's header, as the loader reads it
WORDS = (
    'revenue grew strongly in the quarter , the company said ; margins "expanded" while guidance '
    "was raised and analysts upgraded the stock after the earnings call"
).split()

HWM = """def hwm():  # peak RSS of this process image in MiB (ru_maxrss would carry the parent's over exec)
    for ln in open("/proc/self/status"):
        if ln.startswith("VmHWM:"):
            return int(ln.split()[1]) / 1024
"""

STAGE = """
import json, time
{hwm}
from pathlib import Path
from finrag_dagster.sources.news import NewsClock
from finrag_dagster.sources.news import stage_news
t0 = time.perf_counter()
st = stage_news([Path({path!r})], set({universe!r}), NewsClock(), Path({root!r}))
acc = st.accepted_count()
print(json.dumps({{"wall": time.perf_counter() - t0, "rss_mib": hwm(),
                  "rows_in": st.rows_in, "rows_read": st.rows_read, "accepted": acc, "action": st.actions}}))
"""

BASELINE = """
import json, time
{hwm}
import polars as pl
t0 = time.perf_counter()
df = pl.read_csv({path!r}, infer_schema=False, encoding="utf8-lossy")
kept = df.filter(pl.col("Stock_symbol").str.strip_chars().str.to_uppercase().is_in({universe!r}))
print(json.dumps({{"wall": time.perf_counter() - t0, "rss_mib": hwm(),
                  "rows_in": df.height, "rows_read": df.height, "accepted": kept.height}}))
"""


def _chunk(rng: np.random.Generator, n: int, start: int) -> pl.DataFrame:
    base = np.datetime64("2017-10-02")
    days = rng.integers(0, 2280, n)
    uni = rng.random(n) < 0.06
    tick = np.where(uni, np.array(UNIVERSE)[rng.integers(0, len(UNIVERSE), n)], np.array(OTHERS)[rng.integers(0, len(OTHERS), n)])
    words = np.array(WORDS)
    lens = rng.integers(250, 700, n)
    arts = [" ".join(words[rng.integers(0, len(words), k)]) for k in lens]
    arts = [a.replace(" ; ", "\n", 1) if i % 5 == 0 else a for i, a in enumerate(arts)]
    ids = np.arange(start, start + n)
    return pl.DataFrame(
        {
            "Date": [f"{base + int(d)} 00:00:00 UTC" for d in days],
            "Article_title": [f"Company {t}, update {i}" for t, i in zip(tick, ids)],
            "Stock_symbol": tick,
            "Url": [f"https://example.com/{t.lower()}/{i}" for t, i in zip(tick, ids)],
            "Publisher": "Bench Wire",
            "Author": "",
            "Article": arts,
            "Lsa_summary": [a[:200] for a in arts],
            "Luhn_summary": "",
            "Textrank_summary": "",
            "Lexrank_summary": "",
        }
    ).select(COLUMNS)


def write_csv(path: Path, gb: float, start: int = 0, header: bool = True, seed: int = 0) -> int:
    """Append about ``gb`` GB of rows; returns the number of rows written."""
    rng = np.random.default_rng(seed)
    rows, target = 0, int(gb * 1e9)
    with open(path, "wb" if header else "ab") as fh:
        first, begin = header, fh.tell()
        while fh.tell() - begin < target:
            df = _chunk(rng, 20_000, start + rows)
            df.write_csv(fh, include_header=first)
            first = False
            rows += df.height
    return rows


def prefix(src: Path, dst: Path, gb: float) -> None:
    """The first records of ``src`` up to about ``gb`` GB (cut at a record boundary)."""
    df = pl.read_csv(src, infer_schema=False, n_rows=int(gb * 1e9 / (src.stat().st_size / _rows(src))))
    df.write_csv(dst)


def _rows(src: Path) -> int:
    return pl.scan_csv(src, infer_schema=False).select(pl.len()).collect(engine="streaming").item()


def run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(name: str, r: dict, mb: float) -> str:
    if "error" in r:
        return f"{name:34s}: failed ({r['error']})"
    return (
        f"{name:34s}: {r['wall']:7.1f} s, {mb / max(r['wall'], 1e-9):7.1f} MB/s, "
        f"{r['rows_read'] / max(r['wall'], 1e-9):9.0f} rows/s read, peak RSS {r['rss_mib']:7.0f} MiB, "
        f"rows in {r['rows_in']}, read {r['rows_read']}, accepted {r['accepted']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=5.0, help="size of the generated CSV")
    ap.add_argument("--baseline-gb", type=float, default=1.0, help="prefix the whole-file baseline reads")
    ap.add_argument("--append-mb", type=float, default=50.0, help="rows appended before the incremental re-run")
    ap.add_argument("--dir", default=None, help="where to write the files (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        big, small = tmp / "fnspid_news.csv", tmp / "fnspid_news_prefix.csv"
        t0 = time.perf_counter()
        n = write_csv(big, args.gb)
        prefix(big, small, args.baseline_gb)
        gen = time.perf_counter() - t0
        size_mb, small_mb = big.stat().st_size / 1e6, small.stat().st_size / 1e6
        print(f"generated {size_mb / 1e3:.2f} GB ({n} rows) and a {small_mb / 1e3:.2f} GB prefix in {gen:.0f} s")

        fmt = {"universe": UNIVERSE, "hwm": HWM}
        s_small = run(STAGE.format(path=str(small), root=str(tmp / "stage_small"), **fmt))
        b_small = run(BASELINE.format(path=str(small), **fmt))
        s_big = run(STAGE.format(path=str(big), root=str(tmp / "stage"), **fmt))
        s_again = run(STAGE.format(path=str(big), root=str(tmp / "stage"), **fmt))
        added = write_csv(big, args.append_mb / 1e3, start=n, header=False, seed=1)
        s_grown = run(STAGE.format(path=str(big), root=str(tmp / "stage"), **fmt))

        print(line(f"baseline read_csv, {small_mb / 1e3:.2f} GB", b_small, small_mb))
        print(line(f"streaming loader, {small_mb / 1e3:.2f} GB", s_small, small_mb))
        print(line(f"streaming loader, {size_mb / 1e3:.2f} GB", s_big, size_mb))
        print(line("re-run, nothing new", s_again, 0.0))
        print(line(f"re-run after {added} rows appended", s_grown, args.append_mb))
        if "error" not in b_small and "error" not in s_small:
            print(
                f"peak RSS, baseline / streaming on {small_mb / 1e3:.2f} GB: {b_small['rss_mib'] / s_small['rss_mib']:.1f}x; "
                f"time: {b_small['wall'] / s_small['wall']:.2f}x"
            )
        if "error" not in s_big and "error" not in s_small:
            print(
                f"streaming peak RSS, {size_mb / 1e3:.2f} GB / {small_mb / 1e3:.2f} GB: {s_big['rss_mib'] / s_small['rss_mib']:.2f}x "
                f"for {size_mb / small_mb:.1f}x the bytes"
            )


if __name__ == "__main__":
    main()
