"""A local S3-compatible server for tests: moto's server mode on 127.0.0.1, one process per test session."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

KEYS = {"AWS_ACCESS_KEY_ID": "finrag-test", "AWS_SECRET_ACCESS_KEY": "finrag-test-secret", "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, endpoint: str):
        self.endpoint = endpoint

    def env(self) -> dict[str, str]:
        """What a process needs to reach this server: the keys and ``AWS_ENDPOINT_URL``."""
        return {**KEYS, "AWS_ENDPOINT_URL": self.endpoint}

    def bucket(self) -> str:
        """A new empty bucket."""
        import boto3

        name = f"finrag-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=self.endpoint, **_boto_keys()).create_bucket(Bucket=name)
        return name


def _boto_keys() -> dict:
    return {"aws_access_key_id": KEYS["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": KEYS["AWS_SECRET_ACCESS_KEY"], "region_name": "us-east-1"}


def start_server():
    """Start ``moto_server`` on a free port of 127.0.0.1; returns (process, endpoint)."""
    exe = Path(sys.executable).with_name("moto_server")
    if not exe.exists():
        pytest.skip("moto[server] is not installed (pip install 'finrag[test]')")
    port = _free_port()
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"moto_server exited with {proc.returncode}")
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("moto_server did not start within 60 s")


@pytest.fixture(scope="session")
def s3_server():
    proc, endpoint = start_server()
    try:
        yield S3Server(endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def s3_env(s3_server, monkeypatch, tmp_path):
    """This process reaches the test server (keys, endpoint); remote lakes' working folders go under tmp_path."""
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return s3_server
