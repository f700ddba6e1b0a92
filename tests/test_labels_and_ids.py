"""Inputs that used to give silently wrong numbers: ids of different types on the two sides
with ``--memory-limit`` (queries lost between buckets), gains that overflow a double (NaN or
0 for a perfect ranking), decimal labels with a fraction, UInt64 ids above 2**63 against
Int64, a memory limit of 0, a TMPDIR without room for the buckets, and the "no relevant
document" warning under a gain that makes label 0 relevant.

Each is now exact (the one-pass numbers, worked out here by hand) or a clear error with its
exit code, a message naming the problem, and ``--out`` untouched."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline import Evaluation, units
from pipeline.api import evaluate
from pipeline.errors import InvalidInput
from pipeline.inputs import prepare
from pipeline.io.read import Columns
from pipeline.registry import MAX_GAIN, Gain
from pipeline.units import BYTES_PER_RUN_ROW
from tests.helpers import ROOT, TOLERANCE, limit_beyond_floor, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess (Spark: tests/test_validation_engines.py)")

SETTINGS = settings(
    derandomize=True,
    database=None,
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
QUERIES = 60  # queries of the standard run: three results each, one judged document


def write(path: Path, columns: dict[str, pa.Array]) -> Path:
    """A Parquet file with exactly these Arrow types (dictionary, large_string, decimal, ...)."""
    pq.write_table(pa.table(columns), path)
    return path


def standard_inputs(folder: Path, run_ids: pa.DataType, qrels_ids: pa.DataType) -> tuple[Path, Path]:
    """Query q retrieves d0, d1, d2 (scores 3, 2, 1); its one judged document is d{q % 3},
    with label 1 + q % 2, so its NDCG is 1 / log2(q % 3 + 2) whatever the label."""
    queries = [q for q in range(QUERIES) for _ in range(3)]
    run = write(
        folder / "run.parquet",
        {
            "query_id": _ids(queries, run_ids),
            "doc_id": pa.array([f"d{i % 3}" for i in range(len(queries))]),
            "score": pa.array([3.0 - i % 3 for i in range(len(queries))]),
        },
    )
    qrels = write(
        folder / "qrels.parquet",
        {
            "query_id": _ids(list(range(QUERIES)), qrels_ids),
            "doc_id": pa.array([f"d{q % 3}" for q in range(QUERIES)]),
            "relevance": pa.array([1 + q % 2 for q in range(QUERIES)], pa.int64()),
        },
    )
    return run, qrels


def _ids(values: list[int], dtype: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(dtype):
        return pa.array([str(v) for v in values]).dictionary_encode()
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return pa.array([str(v) for v in values], dtype)
    return pa.array(values, dtype)


def expected_ndcg(query: int, k: int | None) -> float:
    position = query % 3 + 1
    return 0.0 if k is not None and position > k else 1.0 / math.log2(position + 1)


def limit_for(buckets: int, run_rows: int) -> str:
    """A --memory-limit that splits a run of ``run_rows`` rows into about ``buckets`` buckets
    on the Polars engine."""
    return f"{max(1, run_rows * BYTES_PER_RUN_ROW // buckets)}B"


# DuckDB enforces its memory limit (a few KB fail), so its buckets come from a larger size per
# run row than the real one, as in tests/test_out_of_core.py.
DUCKDB_LIMIT = 64_000_000


def duckdb_floor() -> int:
    """pipeline.engines.duckdb.statement_floor of NDCG alone (whatever the cutoffs: a whole
    number of 4 MiB steps), measured as the engine measures it: it moves with the statement's
    steps (20 MiB, then 24 MiB with the C/W/L closed-form steps)."""
    from pipeline.engines.duckdb import statement_floor

    return statement_floor(Evaluation(cutoffs=(1,)))


def cli_in_buckets(engine: str, buckets: int, run_rows: int, *args: object) -> subprocess.CompletedProcess[str]:
    """``ndcg evaluate ARGS`` split into about ``buckets`` buckets: on Polars by a tiny
    --memory-limit, on DuckDB by 64MB with the size of a run row raised to match (the same
    command line, run by ``pipeline.cli.main`` in a subprocess)."""
    if engine == "polars":
        return run_cli("evaluate", *args, "--engine", engine, "--memory-limit", limit_for(buckets, run_rows))
    # the room DuckDB's floor leaves, over the buckets asked (the floor of NDCG's statement,
    # whatever the cutoffs: a whole number of 4 MiB steps)
    row_size = (DUCKDB_LIMIT - duckdb_floor()) * buckets // run_rows
    program = (
        "import sys; from pipeline import units; from pipeline.cli import main; "
        f"units.BYTES_PER_RUN_ROW = {row_size}; sys.exit(main(sys.argv[1:]))"
    )
    argv = ["evaluate", *map(str, args), "--engine", engine, "--memory-limit", f"{DUCKDB_LIMIT}B"]
    return subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True, cwd=ROOT, timeout=300)


def api_limit(engine: str, buckets: int, run_rows: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """The memory limit (and on DuckDB the size of a run row) that makes about ``buckets``."""
    if engine == "polars":
        return limit_for(buckets, run_rows)
    monkeypatch.setattr(units, "BYTES_PER_RUN_ROW", (DUCKDB_LIMIT - duckdb_floor()) * buckets // run_rows)
    return f"{DUCKDB_LIMIT}B"


def kept(folder: Path) -> Path:
    """An --out folder holding a file of the user's, which no failed run may touch."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.txt").write_text("the user's")
    return folder


def assert_refused(done: subprocess.CompletedProcess[str], out: Path, code: int, *words: str) -> None:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for word in words:
        assert word.lower() in done.stderr.lower(), f"{word!r} not in {done.stderr!r}"
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    assert (out / "mine.txt").read_text() == "the user's"


def evaluate_cli(engine: str, run: Path, qrels: Path, out: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, "--out", out, *args)


# --- out of core: ids of different types on the two sides ------------------------------------


def test_int_run_ids_against_text_qrels_ids_in_buckets(tmp_path: Path, engine: str) -> None:
    """Buckets were chosen by hashing each input's ids before they were aligned: 7 and "7"
    hash apart, so about half the queries lost their judgments, with exit 0."""
    run, qrels = standard_inputs(tmp_path, pa.int64(), pa.string())
    common = ("--run", run, "--qrels", qrels, "--k", "1", "--warn-results-over", "0")
    assert run_cli("evaluate", *common, "--engine", engine, "--out", tmp_path / "one").returncode == 0
    done = cli_in_buckets(engine, 6, 3 * QUERIES, *common, "--out", tmp_path / "buckets", "--log-level", "info")
    assert done.returncode == 0, done.stderr
    assert "evaluating in 6 buckets" in done.stderr
    assert "only in" not in done.stderr  # no query lost its judgments
    one_pass = pl.read_parquet(tmp_path / "one" / "per_query.parquet")
    in_buckets = pl.read_parquet(tmp_path / "buckets" / "per_query.parquet")
    assert in_buckets.equals(one_pass)  # bit for bit
    assert in_buckets.schema["query_id"] == pl.String  # compared as text, as the README says
    assert in_buckets.height == 2 * QUERIES
    for row in in_buckets.iter_rows(named=True):
        assert row["ndcg"] == pytest.approx(expected_ndcg(int(row["query_id"]), row["k"]), abs=TOLERANCE)
    summary = pl.read_parquet(tmp_path / "buckets" / "summary.parquet").sort("k", nulls_last=False)
    assert summary["queries"].to_list() == [QUERIES, QUERIES]
    whole = sum(expected_ndcg(q, None) for q in range(QUERIES)) / QUERIES
    assert summary["ndcg"].to_list() == pytest.approx([whole, 1 / 3], abs=TOLERANCE)


def test_uint64_ids_above_2_63_against_int64_ids(tmp_path: Path, engine: str) -> None:
    """Both used to be cast to Int64, which 2**63 + 5 does not fit: an internal error. They are
    compared as text now, in one pass and in buckets."""
    big = 2**63 + 5
    run = write(
        tmp_path / "run.parquet",
        {
            "query_id": pa.array([big, big, 7, 7], pa.uint64()),
            "doc_id": pa.array(["a", "b", "a", "b"]),
            "score": pa.array([2.0, 1.0, 1.0, 2.0]),
        },
    )
    qrels = write(
        tmp_path / "qrels.parquet",
        {
            "query_id": pa.array([7, 7, -3], pa.int64()),
            "doc_id": pa.array(["a", "b", "a"]),
            "relevance": pa.array([1, 2, 1], pa.int64()),
        },
    )
    for out in (tmp_path / "one", tmp_path / "buckets"):
        args = ("--run", run, "--qrels", qrels, "--k", "1", "--out", out, "--verbose")
        done = (
            cli_in_buckets(engine, 4, 4, *args)
            if out.name == "buckets"
            else run_cli("evaluate", *args, "--engine", engine)
        )
        assert done.returncode == 0, done.stderr
        table = pl.read_parquet(out / "per_query.parquet")
        # query 7 ranks b (label 2) then a (label 1): the ideal order
        assert table["query_id"].to_list() == ["7", "7"]
        assert table["ndcg"].to_list() == pytest.approx([1.0, 1.0], abs=TOLERANCE)
        assert table["dcg"].to_list() == pytest.approx([2 + 1 / math.log2(3), 2.0], abs=TOLERANCE)
        assert str(big) in done.stderr  # only in the run, named as it is


ID_TYPES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
}


@pytest.mark.slow  # a Hypothesis search over id types and bucket counts
@SETTINGS
@given(
    run_type=st.sampled_from(sorted(ID_TYPES)),
    qrels_type=st.sampled_from(sorted(ID_TYPES)),
    buckets=st.integers(min_value=1, max_value=16),
    queries=st.lists(st.integers(min_value=0, max_value=120), min_size=1, max_size=30, unique=True),
    engine=st.sampled_from(["polars", "polars", "duckdb"]),
)
# the pairs that lost queries or failed before, always tried
@example(run_type="int64", qrels_type="string", buckets=5, queries=list(range(0, 60, 3)), engine="polars")
@example(run_type="dictionary", qrels_type="large_string", buckets=7, queries=list(range(25)), engine="duckdb")
@example(run_type="int8", qrels_type="uint32", buckets=3, queries=list(range(1, 100, 7)), engine="polars")
@example(run_type="uint64", qrels_type="int16", buckets=9, queries=list(range(30)), engine="duckdb")
def test_buckets_equal_one_pass_for_any_id_types(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    run_type: str,
    qrels_type: str,
    buckets: int,
    queries: list[int],
    engine: str,
) -> None:
    """Out of core equals one pass for every pair of id types one pass accepts, in any number
    of buckets: the same rows, bit for bit, and the same warnings."""
    folder = tmp_path_factory.mktemp("ids")
    judged = [q for i, q in enumerate(queries) if i % 4 != 3] or queries[:1]  # some queries only in the run
    run = write(
        folder / "run.parquet",
        {
            "query_id": _ids([q for q in queries for _ in range(3)], ID_TYPES[run_type]),
            "doc_id": pa.array([f"d{i % 3}" for i in range(3 * len(queries))]),
            "score": pa.array([float((q * 7 + i) % 5) for q in queries for i in range(3)]),
        },
    )
    qrels = write(
        folder / "qrels.parquet",
        {
            "query_id": _ids([q for q in judged for _ in range(2)] + [121], ID_TYPES[qrels_type]),
            "doc_id": pa.array([f"d{(q + i) % 4}" for q in judged for i in range(2)] + ["d0"]),
            "relevance": pa.array([(q + i) % 3 for q in judged for i in range(2)] + [2], pa.int64()),
        },
    )
    one_pass = evaluate(run, qrels, k=[1, 2], engine=engine, all_queries=True)  # type: ignore[arg-type]
    rows = 3 * len(queries)
    in_buckets = evaluate(
        run,
        qrels,
        k=[1, 2],
        engine=engine,  # type: ignore[arg-type]
        all_queries=True,
        memory_limit=api_limit(engine, buckets, rows, monkeypatch),
    )
    assert in_buckets.per_query.equals(one_pass.per_query)
    assert in_buckets.warnings == one_pass.warnings
    assert in_buckets.per_query["query_id"].n_unique() == len(set(judged) | {121})
    if engine == "polars":
        assert in_buckets.summary.equals(one_pass.summary)


def test_the_split_hashes_aligned_ids(tmp_path: Path) -> None:
    """The root of the lost queries: both inputs' ids have one type before any is hashed."""
    run, qrels = standard_inputs(tmp_path, pa.int16(), pa.dictionary(pa.int8(), pa.string()))
    prepared = prepare(run, qrels, Columns(), None, None, Evaluation())
    parts = units.split_into_buckets(prepared, 7, tmp_path / "split")
    assert {part.run.collect_schema()["query_id"] for part in parts} == {pl.String}
    for part in parts:
        assert set(part.run.collect()["query_id"]) == set(part.qrels.collect()["query_id"])


# --- gains that overflow a double ----------------------------------------------------------------


def labelled_inputs(folder: Path, labels: pa.Array) -> tuple[Path, Path]:
    """One query ranking its documents d0, d1, ... in order (scores descending), judged with
    ``labels`` in that order."""
    docs = pa.array([f"d{i}" for i in range(len(labels))])
    run = write(
        folder / "run.parquet",
        {
            "query_id": pa.array(["q"] * len(labels)),
            "doc_id": docs,
            "score": pa.array([float(-i) for i in range(len(labels))]),
        },
    )
    qrels = write(
        folder / "qrels.parquet", {"query_id": pa.array(["q"] * len(labels)), "doc_id": docs, "relevance": labels}
    )
    return run, qrels


# Validation runs before either engine, so the rarer cases run on one engine only.
@pytest.mark.parametrize(
    ("engine", "labels", "gain", "shown"),
    [
        ("polars", [1024, 3], "exponential", "1024"),  # 2**1024 - 1 is inf: NaN for this perfect ranking
        ("duckdb", [1024, 3], "exponential", "1024"),
        ("duckdb", [1023, 3], "exponential", "1023"),  # finite, but IDCG = inf: NDCG 0
        ("polars", [1e308, 1e308], "linear", "1e+308"),  # IDCG = inf
    ],
    ids=["polars-exponential-1024", "duckdb-exponential-1024", "duckdb-exponential-1023", "polars-linear-1e308"],
)
def test_labels_whose_gain_overflows_are_refused(
    tmp_path: Path, engine: str, labels: list[float], gain: str, shown: str
) -> None:
    run, qrels = labelled_inputs(tmp_path, pa.array(labels, pa.float64() if gain == "linear" else pa.int64()))
    out = kept(tmp_path / "out")
    done = evaluate_cli(engine, run, qrels, out, "--gain", gain, "--k", "1")
    assert_refused(done, out, 3, str(qrels), "'relevance'", shown, f"--gain {gain}", "largest gain", "overflow")


def test_gain_map_values_beyond_the_bound_are_usage_errors(tmp_path: Path) -> None:
    run, qrels = labelled_inputs(tmp_path, pa.array([1, 0], pa.int64()))
    out = kept(tmp_path / "out")
    done = evaluate_cli("polars", run, qrels, out, "--gain", "1=1e301")
    assert_refused(done, out, 2, "gain map value", "1e+301", "largest gain")


def test_largest_accepted_gains_give_finite_exact_numbers(tmp_path: Path, engine: str) -> None:
    """Exponential label 996 (gain 2**996 - 1, about 6.7e299) and a level mapped below the
    bound: every column finite, and the perfect ranking scores exactly 1."""
    run, qrels = labelled_inputs(tmp_path, pa.array([1024, 996, 996, 1], pa.int64()))
    done = evaluate_cli(engine, run, qrels, tmp_path / "out", "--gain", "exponential+1024=1e300", "--k", "2")
    assert done.returncode == 0, done.stderr
    table = pl.read_parquet(tmp_path / "out" / "per_query.parquet").sort("k", nulls_last=False)
    big = float(2**996 - 1)
    idcg = [1e300 + big / math.log2(3) + big / math.log2(4) + 1 / math.log2(5), 1e300 + big / math.log2(3)]
    assert table["idcg"].to_list() == pytest.approx(idcg, rel=1e-12)
    assert table["cg"].to_list() == pytest.approx([1e300 + 2 * big + 1, 1e300 + big], rel=1e-12)
    assert table["ndcg"].to_list() == pytest.approx([1.0, 1.0], abs=TOLERANCE)


GAINS = ["linear", "exponential", "binary", "exponential+1100=5", "0=1e300,1=-1e300"]
huge_labels = st.one_of(
    st.integers(min_value=-3, max_value=5),
    st.integers(min_value=990, max_value=1100),  # around exponential's bound (996) and 2**1024
    st.floats(min_value=1e295, max_value=1.7e308),  # around linear's bound (1e300) and DBL_MAX
    st.sampled_from([1e300, 996.0, 996.5, 996.6, 997.0, 1023.0, 1024.0]),
)


def gain_beyond_bound(label: float, gain: Gain) -> bool:
    """Worked out without the engines: whether this label's gain exceeds 1e300 in magnitude."""
    if label < 0 or any(level == label for level, _ in gain.levels) or gain.kind == "binary":
        return False
    if gain.kind == "exponential":
        return label * math.log10(2) > 300  # 2**label - 1 > 1e300
    return label > MAX_GAIN


@SETTINGS
@given(
    labels=st.lists(huge_labels, min_size=1, max_size=6),
    gain_text=st.sampled_from(GAINS),
    engine=st.sampled_from(["polars", "duckdb"]),
)
def test_ndcg_is_finite_and_in_0_1_or_refused(labels: list[float], gain_text: str, engine: str) -> None:
    gain = Gain.parse(gain_text)
    labels = [float(label) for label in labels]
    n = len(labels)
    run = pl.LazyFrame(
        {"query_id": ["q"] * n, "doc_id": [f"d{i}" for i in range(n)], "score": [float(i % 3) for i in range(n)]}
    )
    qrels = pl.LazyFrame({"query_id": ["q"] * n, "doc_id": [f"d{i}" for i in range(n)], "relevance": labels})
    refused = any(gain_beyond_bound(label, gain) for label in labels)
    try:
        result = evaluate(run, qrels, k=[1, 3], gain=gain, engine=engine, allow_fractional_labels=True)  # type: ignore[arg-type]
    except InvalidInput as error:
        assert refused, f"refused without a label beyond the bound: {error}"
        assert "largest gain" in str(error)
        return
    assert not refused, f"accepted labels {labels} under {gain_text}"
    for column in ("cg", "dcg", "idcg", "ndcg"):
        assert result.per_query[column].is_finite().all(), result.per_query
        assert result.summary[column].is_finite().all(), result.summary
    # a map's negative gains can make DCG negative; NDCG stays <= 1 and finite
    upper = result.per_query["ndcg"].max()
    assert upper is not None and upper <= 1 + 1e-12  # type: ignore[operator]
    if not any(g < 0 for _, g in gain.levels):
        assert result.per_query["ndcg"].min() >= 0  # type: ignore[operator]


# --- every numeric label type goes through the same checks ---------------------------------------


@pytest.mark.parametrize(
    ("engine", "labels"),
    [
        ("polars", pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(5, 2))),
        ("duckdb", pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(5, 2))),
        ("duckdb", pa.array([1.5, 2.0], pa.float32())),
    ],
    ids=["polars-decimal(5,2)", "duckdb-decimal(5,2)", "duckdb-float32"],
)
def test_fractional_labels_of_any_type_are_refused(tmp_path: Path, engine: str, labels: pa.Array) -> None:
    run, qrels = labelled_inputs(tmp_path, labels)
    out = kept(tmp_path / "out")
    done = evaluate_cli(engine, run, qrels, out)
    assert_refused(done, out, 3, str(qrels), "fractional part", "1.5", "--allow-fractional-labels")


def test_large_decimals_are_tested_exactly(tmp_path: Path) -> None:
    """12345678901234567.5 is an integer once cast to a double: the decimal itself is tested."""
    run, qrels = labelled_inputs(tmp_path, pa.array([Decimal("12345678901234567.5"), Decimal(0)], pa.decimal128(20, 1)))
    with pytest.raises(InvalidInput, match="fractional part"):
        evaluate(run, qrels, k=[1])


LABEL_TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(5, 2),
    pa.decimal128(9, 0),
]


@pytest.mark.parametrize("label_type", LABEL_TYPES, ids=str)
def test_integral_labels_of_every_numeric_type_score_alike(
    tmp_path: Path, engine: str, label_type: pa.DataType
) -> None:
    """Labels 0, 2, 1 ranked in that order: DCG = 2 / log2(3) + 1 / log2(4), IDCG = 2 + 1 / log2(3)."""
    values = [0, 2, 1]
    labels = pa.array([Decimal(v) for v in values] if pa.types.is_decimal(label_type) else values, label_type)
    run, qrels = labelled_inputs(tmp_path, labels)
    result = evaluate(run, qrels, k=[2], engine=engine)  # type: ignore[arg-type]
    whole = result.per_query.filter(pl.col("k").is_null()).row(0, named=True)
    assert whole["dcg"] == pytest.approx(2 / math.log2(3) + 1 / 2, abs=TOLERANCE)
    assert whole["ndcg"] == pytest.approx((2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3)), abs=TOLERANCE)


def test_fractional_decimal_labels_are_scored_when_allowed(tmp_path: Path, engine: str) -> None:
    run, qrels = labelled_inputs(tmp_path, pa.array([Decimal("0.50"), Decimal("1.50")], pa.decimal128(5, 2)))
    done = evaluate_cli(engine, run, qrels, tmp_path / "out", "--k", "1", "--allow-fractional-labels")
    assert done.returncode == 0, done.stderr
    table = pl.read_parquet(tmp_path / "out" / "per_query.parquet").sort("k", nulls_last=False)
    # ranked 0.5 then 1.5; ideal 1.5 then 0.5
    expected = [(0.5 + 1.5 / math.log2(3)) / (1.5 + 0.5 / math.log2(3)), 0.5 / 1.5]
    assert table["ndcg"].to_list() == pytest.approx(expected, abs=TOLERANCE)


# --- resources: the memory limit and TMPDIR ------------------------------------------------------


def test_memory_limit_of_zero_is_a_usage_error(tmp_path: Path, engine: str) -> None:
    run, qrels = standard_inputs(tmp_path, pa.int64(), pa.int64())
    out = kept(tmp_path / "out")
    done = evaluate_cli(engine, run, qrels, out, "--memory-limit", "0B")
    assert_refused(done, out, 2, "memory limit '0B'", "above 0")


def _can_mount_tmpfs() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt && umount /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare and a tmpfs mount in a user namespace")
@pytest.mark.parametrize("run_ids", ["text", "integer"])
def test_tmpdir_without_room_for_the_buckets(tmp_path: Path, engine: str, run_ids: str) -> None:
    """TMPDIR on a 64 KB disk (a tmpfs in a private mount namespace) while the split needs
    more: exit 2 naming TMPDIR and the full disk, no bucket file left behind (also when the
    writer threads flush after the split failed, seen with ids aligned to text), --out untouched."""
    rows = 20_000
    run = write(
        tmp_path / "run.parquet",
        {
            "query_id": pa.array([f"q{i // 10}" if run_ids == "text" else i // 10 for i in range(rows)]),
            "doc_id": pa.array([f"document-{i}" for i in range(rows)]),
            "score": pa.array([float(i % 10) for i in range(rows)]),
        },
    )
    qrels = write(
        tmp_path / "qrels.parquet",
        {
            "query_id": pa.array([f"q{i}" for i in range(rows // 10)]),
            "doc_id": pa.array([f"document-{10 * i}" for i in range(rows // 10)]),
            "relevance": pa.array([1] * (rows // 10)),
        },
    )
    out = kept(tmp_path / "out")
    small = tmp_path / "small"
    small.mkdir()
    command = (
        f'mount -t tmpfs -o size=64k tmpfs "{small}" && cd "{ROOT}" && '
        f'TMPDIR="{small}" "{sys.executable}" -m pipeline evaluate --run "{run}" --qrels "{qrels}" '
        f'--engine {engine} --out "{out}" --memory-limit {limit_beyond_floor(engine, 300_000)}; echo "rc=$?"; '
        f'echo "left:"; ls -A "{small}"'
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", command], capture_output=True, text=True, timeout=300)
    assert "rc=2" in done.stdout, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("left:"), done.stdout  # the partial buckets were removed
    assert "TMPDIR" in done.stderr and "no space left" in done.stderr.lower(), done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


# --- the "no relevant document" warning reads the spec -------------------------------------------


def test_no_relevant_warning_follows_the_gain(tmp_path: Path, engine: str) -> None:
    """Labels 0 only: by default the query scores 0 and is warned about; with --gain 0=1 label
    0 gains 1, the ranking is ideal (NDCG 1) and there is nothing to warn about."""
    run, qrels = labelled_inputs(tmp_path, pa.array([0, 0], pa.int64()))
    default = evaluate_cli(engine, run, qrels, tmp_path / "default", "--k", "1", "--verbose")
    assert default.returncode == 0 and "without any relevant document" in default.stderr, default.stderr
    assert "they score 0" in default.stderr
    mapped = evaluate_cli(engine, run, qrels, tmp_path / "mapped", "--k", "1", "--gain", "0=1")
    assert mapped.returncode == 0, mapped.stderr
    assert "without any relevant document" not in mapped.stderr
    assert pl.read_parquet(tmp_path / "mapped" / "per_query.parquet")["ndcg"].to_list() == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize(
    ("options", "warned", "fate"),
    [
        ({"gain": "binary", "relevance_threshold": 2}, True, "score 0"),  # label 1 is not relevant: gain 0
        ({"gain": "linear", "relevance_threshold": 2}, False, ""),  # the threshold leaves linear gains alone
        ({"gain": "1=0"}, True, "score 0"),
        ({"empty_ideal": "one"}, False, ""),  # label 1 gains 1
        ({"gain": "1=0", "empty_ideal": "skip"}, True, "left out of the summary"),
    ],
)
def test_no_relevant_warning_under_each_convention(tmp_path: Path, options: dict, warned: bool, fate: str) -> None:
    run, qrels = labelled_inputs(tmp_path, pa.array([1, 0], pa.int64()))
    result = evaluate(run, qrels, k=[1], **options)
    warnings = {w.code: w for w in result.warnings}
    assert ("queries_without_relevant" in warnings) == warned
    idcg = result.per_query["idcg"].to_list()
    assert all(value == 0 for value in idcg) == warned  # the warning says exactly when IDCG is 0
    if warned:
        assert fate in warnings["queries_without_relevant"].message


# --- Spark: validation shares the rules ----------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    ("labels", "args", "words"),
    [
        (pa.array([1024, 3], pa.int64()), ("--gain", "exponential"), ("1024", "largest gain")),
        (pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(5, 2)), (), ("fractional part",)),
    ],
    ids=["exponential-1024", "decimal-1.50"],
)
def test_spark_refuses_alike(
    tmp_path: Path, spark_cli: Callable, labels: pa.Array, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    run, qrels = labelled_inputs(tmp_path, labels)
    out = kept(tmp_path / "out")
    done = spark_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", "spark", "--out", out, "--k", "1", *args)
    assert_refused(done, out, 3, *words)


@pytest.mark.spark
def test_spark_no_relevant_warning_follows_the_gain(tmp_path: Path, local_spark: object) -> None:
    """Spark's reading and validation (the engine's ``load``), where the warning is decided;
    that the command line prints Spark's warnings is tests/test_validation_engines.py's
    test_cli_spark_prints_warnings_and_honours_the_limit."""
    from pipeline.api import make_evaluation
    from pipeline.engines import spark as spark_engine
    from pipeline.inputs import Inputs

    run, qrels = labelled_inputs(tmp_path, pa.array([0, 0], pa.int64()))
    inputs = Inputs(str(run), str(qrels))
    default = spark_engine.load(inputs, make_evaluation(k=[1]), spark=local_spark).warnings  # type: ignore[arg-type]
    assert any("without any relevant document" in str(warning) for warning in default), default
    mapped = spark_engine.load(inputs, make_evaluation(k=[1], gain="0=1"), spark=local_spark).warnings  # type: ignore[arg-type]
    assert not any("without any relevant document" in str(warning) for warning in mapped), mapped


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_csv_ids_are_text_so_zero_padded_ids_match(tmp_path: Path, engine: str) -> None:
    """A CSV's ids are read as text: ``007`` stays ``007`` and meets the qrels' ``007`` (TREC
    text), where read as a number it was 7 and matched nothing (NDCG 0, exit 0). Each query's
    best document is ranked first, so every NDCG is 1; a CSV holding both 007 and 7 holds two
    documents."""
    from tests.helpers import run_cli

    run = tmp_path / "run.csv"
    run.write_text("query_id,doc_id,score\nq1,007,2.0\nq1,070,1.0\nq1,7,0.5\nq2,0012,1.0\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 007 2\nq1 0 070 1\nq2 0 0012 1\n")
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "1,3", "--engine", engine, "--out", out)
    assert result.returncode == 0, result.stderr
    table = pl.read_parquet(out / "per_query.parquet")
    assert table.height == 2 * 3
    assert table["ndcg"].to_list() == pytest.approx([1.0] * 6)
