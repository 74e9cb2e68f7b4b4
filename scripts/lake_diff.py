"""Compare two lakes file by file: the check behind "no behaviour change" for a refactor.

    python scripts/lake_diff.py LAKE_A LAKE_B

Every parquet file under either lake is compared by its bytes (sha256). A file whose bytes differ
only in a column that records wall-clock time (``reader_cache.latency_ms``) is compared again
without that column and counted as "same apart from timing". Exits 1 when any file is missing on
one side or differs in content, else 0.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import polars as pl

WALL_CLOCK = {"reader_cache": ["latency_ms"]}  # table -> columns that measure elapsed time


def files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*.parquet")) if "_staging" not in p.parts}


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main(a: Path, b: Path) -> int:
    fa, fb = files(a), files(b)
    only = sorted(set(fa) ^ set(fb))
    timing, differ = [], []
    for k in sorted(set(fa) & set(fb)):
        if digest(fa[k]) == digest(fb[k]):
            continue
        drop = WALL_CLOCK.get(k.split("/")[0], [])
        if drop and pl.read_parquet(fa[k]).drop(drop).equals(pl.read_parquet(fb[k]).drop(drop)):
            timing.append(k)
        else:
            differ.append(k)
    same = len(set(fa) & set(fb)) - len(timing) - len(differ)
    print(
        f"{len(fa)} files in {a}, {len(fb)} in {b}: {same} byte-identical, {len(timing)} same apart from wall-clock columns, "
        f"{len(differ)} differ, {len(only)} on one side only"
    )
    for k in differ[:20]:
        print(f"  differs: {k}")
    for k in only[:20]:
        print(f"  one side only: {k}")
    return 1 if differ or only else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
