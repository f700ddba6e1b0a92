"""Object stores (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``, ``hf://``) for the Polars
and DuckDB engines: listing by :mod:`pipeline.io.fs`'s rules, the identity of an object, and
the few writes publishing needs (:mod:`pipeline.io.publish_objects`).

Listing and writing go through ``pyarrow.fs`` (pyarrow is a dependency already); the data
files are read by Polars (``object_store``). Both take credentials and endpoints from where
the SDKs look, never from flags: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_PROFILE`` and
``~/.aws/config``/``credentials`` for S3; ``GOOGLE_APPLICATION_CREDENTIALS`` (or the metadata
server) for GCS; ``AZURE_STORAGE_ACCOUNT_NAME`` and ``AZURE_STORAGE_ACCOUNT_KEY`` (or
``AZURE_STORAGE_SAS_TOKEN``) for Azure. An ``AWS_ENDPOINT_URL`` over plain ``http://`` (a local
MinIO, SeaweedFS or moto server) is allowed for Polars too (``aws_allow_http``).

Every failure to reach a store (a bucket that does not exist, wrong credentials, an endpoint
that does not answer) is an :class:`~pipeline.errors.InvalidInput` naming the URL; credentials
from the environment are blanked out of any message that would repeat them.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlparse

from pipeline.errors import InvalidInput, OutputError, UsageError, first_line
from pipeline.io.fs import LOCAL, FileSystem, Kind
from pipeline.io.location import Location

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_SECRET_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "HF_TOKEN",
)
# How long one request may wait for an endpoint that does not answer (seconds): an unreachable
# endpoint fails in seconds with a message, not after minutes of retries.
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0


def error_text(error: BaseException) -> str:
    """The first line of an error's message, credentials blanked out (or its type's name)."""
    return scrub(first_line(error))


def scrub(text: str) -> str:
    """``text`` with the values of the credential variables of the environment blanked out."""
    for name in _SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def storage_options(url: str) -> dict[str, str] | None:
    """Polars' ``storage_options`` for ``url``: None (Polars reads the same environment
    variables itself), except that a plain-``http://`` ``AWS_ENDPOINT_URL`` is allowed."""
    if urlparse(url).scheme != "s3":
        return None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    return {"aws_allow_http": "true"} if endpoint.startswith("http://") else None


class ObjectStore:
    """One bucket (or container) of an object store, as :class:`pipeline.io.fs.FileSystem`
    lists: ``kind``, ``entries`` and ``glob`` of URLs, by the rules of :mod:`pipeline.io.fs`."""

    def __init__(self, scheme: str, netloc: str) -> None:
        self.scheme, self.netloc = scheme, netloc
        self.prefix = f"{scheme}://{netloc}"
        # the bucket or container, as pyarrow names paths: "bucket/key"
        self.bucket = netloc.split("@", 1)[0] if scheme in ("abfs", "abfss") else netloc
        self._filesystem: pafs.FileSystem | None = None

    @property
    def filesystem(self) -> pafs.FileSystem:
        if self._filesystem is None:
            self._filesystem = _pyarrow_filesystem(self.scheme, self.netloc)
        return self._filesystem

    def key(self, url: str) -> str:
        """pyarrow's path of ``url``: ``bucket/key``."""
        rest = url[len(self.prefix) :].strip("/")
        return f"{self.bucket}/{rest}" if rest else self.bucket

    def url(self, key: str) -> str:
        rest = key[len(self.bucket) :].strip("/")
        return f"{self.prefix}/{rest}" if rest else self.prefix

    @property
    def listable(self) -> bool:
        """Whether objects can be listed here (not ``hf://``: Polars reads those files itself)."""
        return self.scheme != "hf"

    def kind(self, path: str) -> Kind:
        import pyarrow.fs as pafs

        if not self.listable:
            if _has_magic(path) or path.endswith("/"):
                _unlisted(path)
            return "file"  # named one by one; Polars says when it does not exist
        with self.reaching(path):
            info = self.filesystem.get_file_info(self.key(path))
        if info.type == pafs.FileType.Directory:
            return "dir"
        if info.type == pafs.FileType.File:
            return "file"
        return "missing"

    def entries(self, folder: str) -> list[tuple[str, Kind]]:
        import pyarrow.fs as pafs

        if not self.listable:
            _unlisted(folder)
        with self.reaching(folder):
            infos = self.filesystem.get_file_info(pafs.FileSelector(self.key(folder), recursive=False))
        kinds: dict[pafs.FileType, Kind] = {pafs.FileType.Directory: "dir", pafs.FileType.File: "file"}
        return sorted((info.base_name, kinds.get(info.type, "other")) for info in infos)

    def glob(self, pattern: str) -> list[str] | None:
        """The objects and prefixes matching ``pattern`` (``*``, ``?`` and ``[...]`` within
        one level, ``**`` across levels), or None when it is not a pattern or names an object.

        Listed level by level, each level only below the prefixes the levels before matched
        (``runs/dt=2026-11-*/*.parquet`` lists ``runs/``, then only November's prefixes), and
        recursively only from a ``**`` on."""
        if not _has_magic(pattern) or self.kind(pattern) != "missing":
            return None
        fixed, _, rest = _split_pattern(pattern)
        if self.kind(fixed) != "dir":
            return []
        levels = rest.split("/")
        found: list[str] = []
        folders = [fixed.rstrip("/")]
        for depth, level in enumerate(levels):
            if level == "**":
                matcher = _pattern_regex("/".join(levels[depth:]))
                for folder in folders:
                    found.extend(self._matching_below(folder, matcher))
                break
            regex, last, below = _pattern_regex(level), depth == len(levels) - 1, []
            for folder in folders:
                for name, kind in self.entries(folder):
                    if not regex.fullmatch(name):
                        continue
                    if last:
                        found.append(f"{folder}/{name}")
                    elif kind == "dir":
                        below.append(f"{folder}/{name}")
            folders = below
        return sorted(set(found))

    def _matching_below(self, folder: str, matcher: re.Pattern[str]) -> list[str]:
        import pyarrow.fs as pafs

        base = self.key(folder)
        with self.reaching(folder):
            infos = self.filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
        return [self.url(info.path) for info in infos if matcher.fullmatch(info.path[len(base) :].strip("/"))]

    def missing(self, path: str) -> str:
        if self.kind(self.prefix) == "missing":
            return f"no such bucket {self.bucket!r} (check the URL, and AWS_ENDPOINT_URL)"
        return "no such object or prefix (check the key)"

    def identity(self, path: str) -> dict[str, Any]:
        """``{"path", "size", "etag", "version_id"}`` of one object (a HEAD request)."""
        with self.reaching(path):
            handle = self.filesystem.open_input_file(self.key(path))
            try:
                metadata = {key.lower(): _text(value) for key, value in handle.metadata().items()}
                size = handle.size()
            finally:
                handle.close()
        return {
            "path": path,
            "size": int(size),
            "etag": metadata.get("etag"),
            "version_id": metadata.get("versionid") or metadata.get("x-amz-version-id"),
        }

    # --- writes (publishing: pipeline.io.publish_objects) ---------------------------------------------

    def read_bytes(self, path: str) -> bytes | None:
        """An object's bytes, or None when there is none."""
        if self.kind(path) != "file":
            return None
        with self.reaching(path), self.filesystem.open_input_stream(self.key(path)) as stream:
            return bytes(stream.read())

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.reaching(path, writing=True), self.filesystem.open_output_stream(self.key(path)) as stream:
            stream.write(data)

    def copy(self, source: str, target: str) -> None:
        with self.reaching(target, writing=True):
            self.filesystem.copy_file(self.key(source), self.key(target))

    def delete(self, path: str) -> None:
        with self.reaching(path, writing=True):
            if self.kind(path) == "file":
                self.filesystem.delete_file(self.key(path))

    def delete_prefix(self, path: str) -> None:
        with self.reaching(path, writing=True):
            if self.kind(path) == "dir":
                self.filesystem.delete_dir(self.key(path))

    @contextmanager
    def reaching(self, url: str, *, writing: bool = False) -> Iterator[None]:
        """Failures of the store as errors naming ``url``: exit 3 when reading an input, exit 2
        when writing an output (the user chooses another ``--out``)."""
        try:
            yield
        except (OSError, ValueError) as error:
            _refuse(url, error, writing=writing)


def _unlisted(url: str) -> NoReturn:
    raise UsageError(
        f"{url}: {url.split(':', 1)[0]}:// files are read by Polars one by one, but cannot be listed here: name "
        "each file (no folders, globs, partitions or --out there)"
    )


def _refuse(url: str, error: BaseException, *, writing: bool) -> NoReturn:
    text = scrub(first_line(error))
    lowered = text.lower()
    if "network_connection" in lowered or "curlcode" in lowered or "timed out" in lowered:
        why = "the endpoint cannot be reached (check AWS_ENDPOINT_URL and the network)"
    elif "access_denied" in lowered or "accessdenied" in lowered or re.search(r"\b(forbidden|403)\b", lowered):
        why = "access denied (check the credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the SDK's config)"
    elif "nosuchbucket" in lowered or "no_such_bucket" in lowered or "bucket does not exist" in lowered:
        why = "no such bucket"
    elif "invalidaccesskeyid" in lowered or "signaturedoesnotmatch" in lowered or "credential" in lowered:
        why = "the credentials were refused (check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the SDK's config)"
    elif "connect" in lowered or "resolve" in lowered or "timeout" in lowered:
        why = "the endpoint cannot be reached (check AWS_ENDPOINT_URL and the network)"
    else:
        why = "the object store refused the request"
    message = f"{url}: {why}: {text}"
    if writing:
        raise OutputError(f"cannot write {message}; choose another --out") from None
    raise InvalidInput(message) from None


def _text(value: object) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text.strip('"')


def filesystem_for(path: str | Location) -> FileSystem:
    """The file system listing ``path``: the local one, or the object store its URL names."""
    return object_store(str(path)) if Location.of(path).is_object_store else LOCAL


def object_store(url: str) -> ObjectStore:
    """The store of ``url``'s bucket (one per scheme, bucket and settings of the environment:
    credentials or an endpoint changed in the environment give a new connection)."""
    parsed = urlparse(url)
    settings = tuple(value for name, value in sorted(os.environ.items()) if name.startswith(_SETTINGS))
    return _store(parsed.scheme.lower(), parsed.netloc, settings)


_SETTINGS = ("AWS_", "AZURE_", "GOOGLE_", "HF_")


@functools.lru_cache(maxsize=32)
def _store(scheme: str, netloc: str, settings: tuple[str, ...]) -> ObjectStore:
    if not netloc:
        raise UsageError(f"{scheme}:// URLs name a bucket: {scheme}://BUCKET/path")
    return ObjectStore(scheme, netloc)


def _pyarrow_filesystem(scheme: str, netloc: str) -> pafs.FileSystem:
    import pyarrow.fs as pafs

    try:
        if scheme == "s3":
            # region, credentials and endpoint (AWS_ENDPOINT_URL) from the environment and the
            # SDK's config files, as Polars reads them
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
            return pafs.S3FileSystem(
                region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None,
                endpoint_override=endpoint,
                connect_timeout=CONNECT_TIMEOUT,
                request_timeout=REQUEST_TIMEOUT,
                retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=2),
            )
        if scheme in ("gs", "gcs"):
            return pafs.GcsFileSystem()
        if scheme in ("az", "abfs", "abfss"):
            account = netloc.split("@", 1)[1].split(".", 1)[0] if "@" in netloc else None
            account = account or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")
            if not account:
                raise UsageError(
                    f"{scheme}://{netloc}: set AZURE_STORAGE_ACCOUNT_NAME (or use abfss://container@account...)"
                )
            key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY")
            return (
                pafs.AzureFileSystem(account_name=account, account_key=key)
                if key
                else pafs.AzureFileSystem(account_name=account)
            )
    except (OSError, ValueError, AttributeError, ImportError) as error:
        raise UsageError(f"{scheme}://{netloc}: cannot open the object store: {scrub(first_line(error))}") from None
    _unlisted(f"{scheme}://{netloc}")


def _has_magic(path: str) -> bool:
    return any(character in path for character in "*?[")


def _split_pattern(pattern: str) -> tuple[str, str, str]:
    """``(fixed folder, "/", the rest)`` of a pattern: the folders before its first magic level."""
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        if _has_magic(part):
            return "/".join(parts[:index]), "/", "/".join(parts[index:])
    return pattern, "", ""


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A regex of a relative pattern: ``*``, ``?`` and ``[...]`` within one level, a level of
    ``**`` any number of levels (as :mod:`glob` with ``recursive=True``).

    >>> bool(_pattern_regex("dt=*/part-?.parquet").fullmatch("dt=1/part-0.parquet"))
    True
    >>> bool(_pattern_regex("*.parquet").fullmatch("dt=1/part-0.parquet"))
    False
    >>> bool(_pattern_regex("**/*.parquet").fullmatch("a/b/c.parquet"))
    True
    >>> bool(_pattern_regex("**").fullmatch("a/b/c.parquet"))
    True
    >>> bool(_pattern_regex("run[[]1].parquet").fullmatch("run[1].parquet"))
    True
    >>> bool(_pattern_regex("run[!0-4].parquet").fullmatch("run5.parquet"))
    True
    """
    levels = []
    parts = pattern.split("/")
    for position, level in enumerate(parts):
        if level == "**":
            levels.append(".*/" if position == len(parts) - 1 else "(?:[^/]+/)*")
            continue
        text, index = "", 0
        while index < len(level):
            character = level[index]
            if character == "*":
                text += "[^/]*"
            elif character == "?":
                text += "[^/]"
            elif character == "[" and "]" in level[index + 2 :]:
                end = level.index("]", index + 2)
                inner = level[index + 1 : end].replace("\\", "\\\\").replace("[", "\\[")
                negated = inner.startswith("!")
                inner = inner[1:] if negated else inner
                text += "[" + ("^" if negated else "") + ("\\" + inner if inner.startswith("^") else inner) + "]"
                index = end
            else:
                text += re.escape(character)
            index += 1
        levels.append(text + "/")
    return re.compile("".join(levels).removesuffix("/"))
