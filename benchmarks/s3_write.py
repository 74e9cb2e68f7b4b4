"""How the lake writes a partition to object storage: one upload, against a temporary key then a copy.

Object stores have no rename. Two ways keep "a crash leaves the previous version" true:

* ``direct`` (what the lake does): build the partition's bytes in memory and send them as one
  upload; the store publishes an object only when its PUT (or multipart upload) completes.
* ``temp+copy`` (the baseline): upload to a temporary key, server-side copy it over the real key,
  delete the temporary key — three requests and the bytes stored twice for a while.

Both are timed in the same run against a local S3-compatible server (moto on 127.0.0.1, started
here), on partitions of the size the lake writes (the evidence table of one day):

    python benchmarks/s3_write.py --partitions 200

The ratio is time(temp+copy) / time(direct); on a real store each request also pays a network
round trip, so the ratio there is at least the request ratio (3:1).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.s3_server import KEYS, start_server  # noqa: E402


def _partition(rows: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    t = pa.table(
        {
            "passage_id": [f"p{seed}-{i}" for i in range(rows)],
            "text": [" ".join(rng.choice(["revenue", "guidance", "filing", "shares", "quarter", "rose", "fell"], 40)) for _ in range(rows)],
            "embedding": [rng.standard_normal(384).astype(np.float32).tolist() for _ in range(rows)],
        }
    )
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="zstd")
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--rows", type=int, default=120, help="rows per partition (one evidence day of the demo is about 120)")
    args = ap.parse_args()
    proc, endpoint = start_server()
    try:
        os.environ.update({**KEYS, "AWS_ENDPOINT_URL": endpoint})
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="bench")
        fs, _ = pafs.FileSystem.from_uri("s3://bench")
        blobs = [_partition(args.rows, i) for i in range(args.partitions)]
        size = sum(map(len, blobs))

        def direct(i: int, data: bytes) -> None:
            with fs.open_output_stream(f"bench/direct/date={i}/part-0.parquet") as out:
                out.write(data)

        def temp_copy(i: int, data: bytes) -> None:
            tmp, key = f"bench/copy/_tmp/{i}.parquet", f"bench/copy/date={i}/part-0.parquet"
            with fs.open_output_stream(tmp) as out:
                out.write(data)
            fs.copy_file(tmp, key)
            fs.delete_file(tmp)

        times = {}
        for name, fn in (("direct", direct), ("temp+copy", temp_copy), ("direct (again)", direct)):
            t0 = time.perf_counter()
            for i, b in enumerate(blobs):
                fn(i, b)
            times[name] = time.perf_counter() - t0
        for name, t in times.items():
            print(f"{name:>15}: {args.partitions} partitions, {size / 2**20:.1f} MiB in {t:.2f} s ({args.partitions / t:.0f} partitions/s)")
        base = min(times["direct"], times["direct (again)"])
        print(f"ratio temp+copy / direct: {times['temp+copy'] / base:.2f}x (requests per partition: 3 against 1)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
