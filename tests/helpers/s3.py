"""The tests' S3 server (moto's, in a subprocess) and its buckets. One server per pytest
process, started on first use; when its process has died, the next test starts another, so
one crash does not fail every later S3 test of the process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


class S3Bucket:
    """A bucket of the tests' S3 server, with the environment set to reach it (credentials and
    endpoint through AWS_* variables, as a user sets them; no flags)."""

    def __init__(self, client: object, name: str) -> None:
        self.client = client
        self.name = name

    def url(self, key: str = "") -> str:
        return f"s3://{self.name}/{key}" if key else f"s3://{self.name}"

    def put(self, key: str, source: Path | bytes) -> None:
        body = source if isinstance(source, bytes) else Path(source).read_bytes()
        self.client.put_object(Bucket=self.name, Key=key, Body=body)  # type: ignore[attr-defined]

    def put_tree(self, prefix: str, folder: Path) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                self.put(f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}", path)

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)  # type: ignore[attr-defined]
        # without the empty folder markers (``prefix/``) pyarrow leaves, as S3 consoles and Hadoop do
        return sorted(
            item["Key"] for page in pages for item in page.get("Contents", []) if not item["Key"].endswith("/")
        )

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()  # type: ignore[attr-defined]


class S3Server:
    """A real S3-compatible HTTP server on 127.0.0.1 (moto's server, a dev dependency), with
    authentication on: an IAM user and its access key are made in the first requests
    (INITIAL_NO_AUTH_ACTION_COUNT), and every later request must be signed with that key, so
    wrong credentials are refused as on a real store.

    :meth:`environment` starts it on first use and again whenever its process has exited; when
    it cannot start, every later call skips with the same reason instead of trying again."""

    def __init__(self, logs: Path) -> None:
        self._logs = logs
        self._process: subprocess.Popen[bytes] | None = None
        self._environment: dict[str, str] = {}
        self._skipped: str | None = None
        self.starts = 0

    def environment(self) -> dict[str, str]:
        if self._skipped is not None:
            pytest.skip(self._skipped)
        if self._process is None or self._process.poll() is not None:
            self.stop()
            try:
                self._environment = self._start()
            except _CannotStart as reason:
                self.stop()
                self._skipped = str(reason)
                pytest.skip(self._skipped)
            except BaseException:
                self.stop()  # half set up (no user or key yet): the next test starts afresh
                raise
        return self._environment

    def _start(self) -> dict[str, str]:
        try:
            import boto3
            import moto.server  # noqa: F401
        except ImportError as error:
            raise _CannotStart(
                f"the tests' S3 server needs moto[server] and boto3 (make dev installs them): {error}"
            ) from error
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        endpoint = f"http://127.0.0.1:{port}"
        self.starts += 1
        log = self._logs / f"server-{self.starts}.log"
        environment = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
        with open(log, "wb") as output:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=output,
                stderr=subprocess.STDOUT,
                env=environment,
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise _CannotStart(
                        f"the tests' S3 server did not start: {log.read_text(errors='replace')[-500:]}"
                    ) from None
                time.sleep(0.1)
        anonymous = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **anonymous)
        iam.create_user(UserName="ndcg")
        allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="ndcg", PolicyName="all", PolicyDocument=json.dumps(allow_all))
        key = iam.create_access_key(UserName="ndcg")["AccessKey"]
        return {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            "AWS_REGION": "us-east-1",
        }

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        self._process = None


class _CannotStart(Exception):
    """Why the S3 server is not there: the S3 tests skip with it."""


@pytest.fixture(scope="session")
def s3_server_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The process's :class:`S3Server`, stopped at the end of the test session."""
    server = S3Server(tmp_path_factory.mktemp("s3-server"))
    yield server
    server.stop()


@pytest.fixture
def s3_server(s3_server_process: S3Server) -> dict[str, str]:
    """The AWS_* variables that reach the running S3 server (started again if it died)."""
    return s3_server_process.environment()


@pytest.fixture
def s3_bucket(s3_server: dict[str, str], monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> S3Bucket:
    """A new, empty bucket of the S3 server, the environment (inherited by the CLI's subprocesses)
    set to reach it, and the user's own AWS configuration files out of the way."""
    import re
    import uuid

    import boto3

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/ndcg-tests-aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/ndcg-tests-aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in s3_server.items():
        monkeypatch.setenv(name, value)
    client = boto3.client(
        "s3",
        endpoint_url=s3_server["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=s3_server["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=s3_server["AWS_SECRET_ACCESS_KEY"],
    )
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=name)
    return S3Bucket(client, name)
