"""The registry of pipeline/registry/ is the one list of conventions and measures: every flag,
config key, API option, SQL variable, Spark refusal and docs/reference.md row is generated from it, and
each choice means the same through every front."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline import cli, transpile
from pipeline.api import _EVALUATION_OPTIONS, make_evaluation
from pipeline.cli_flags import build_parser, parse_args
from pipeline.engines import polars as polars_engine
from pipeline.engines.polars import PER_QUERY_COLUMNS
from pipeline.errors import UsageError
from pipeline.registry import (
    CONVENTION,
    CONVENTIONS,
    COUNTERS,
    MEASURE_NAMES,
    MEASURES,
    OPTIONS,
    PROFILES,
    RETRIEVED,
    SIGNAL_NAMES,
    SQL_VARIABLES,
    SUMMARY_VARIABLE_TYPES,
    Convention,
    Evaluation,
    conventions_table,
    options_table,
    profiles_table,
)
from pipeline.sql_files import GENERATED_STEPS, PER_QUERY_STEPS, VARIABLES, evaluation_variables
from tests.helpers import ROOT, frames, run_cli


def cases() -> list[tuple[Convention, str, Any]]:
    """(convention, flag text, API value) for every choice of every convention, and each
    example of a convention without choices (the registry's; both states of a switch)."""
    found: list[tuple[Convention, str, Any]] = []
    for convention in CONVENTIONS:
        found += [(convention, choice.value, choice.value) for choice in convention.choices]
        if convention.open:
            found.append((convention, "1=3,2=9", "1=3,2=9"))
        if convention.switch:
            found += [(convention, "true", True), (convention, "false", False)]
        else:
            found += [(convention, *example) for example in convention.examples]
    return found


def companions_of(name: str) -> dict[str, Any]:
    """The settings a convention means something beside only (the registry's companions)."""
    return dict(CONVENTION[name].companions) if name in CONVENTION else {}


def from_cli(name: str, text: str) -> Evaluation:
    flag = "--" + name.replace("_", "-")
    argv = ["sql", flag] if text == "true" else ["sql", f"--no-{flag[2:]}"] if text == "false" else ["sql", flag, text]
    for companion, value in companions_of(name.replace("-", "_")).items():
        argv += ["--" + companion.replace("_", "-"), str(value)]
    return cli._evaluation_from(parse_args(build_parser(), argv))


def from_config(tmp_path: Path, key: str, text: str, api_value: Any) -> Evaluation:
    value = str(api_value).lower() if isinstance(api_value, bool) else f'"{text}"'
    config = tmp_path / f"{key}.toml"
    companions = "".join(f'{name} = "{setting}"\n' for name, setting in companions_of(key.replace("-", "_")).items())
    config.write_text(f"{key} = {value}\n{companions}")
    parser = build_parser()
    argv = ["evaluate", "--config", str(config)]
    return cli._evaluation_from(cli._apply_config(parser, parse_args(parser, argv), argv))


def test_every_convention_is_a_flag_a_config_key_and_an_api_option() -> None:
    flags = {action.dest for action in build_parser()._subparsers._group_actions[0].choices["evaluate"]._actions}  # type: ignore[union-attr]
    for convention in CONVENTIONS:
        assert convention.name in flags
        assert convention.name in _EVALUATION_OPTIONS


@pytest.mark.parametrize(
    ("convention", "text", "api_value"),
    cases(),
    ids=lambda value: value.name if isinstance(value, Convention) else str(value),
)
def test_every_choice_means_the_same_by_flag_config_and_api(
    tmp_path: Path, convention: Convention, text: str, api_value: Any
) -> None:
    by_api = make_evaluation(**{convention.name: api_value, **dict(convention.companions)})
    assert from_cli(convention.name, text) == by_api
    for key in (convention.name, convention.name.replace("_", "-")):
        assert from_config(tmp_path, key, text, api_value) == by_api
    # ... and it took effect: the field (or its part) holds the value
    value = getattr(by_api, convention.attribute)
    part = convention.field.partition(".")[2]
    if part:
        assert getattr(value, part) == api_value
    elif convention.name == "k":
        assert value == (1, 3)
    elif convention.name == "gain":
        assert str(value) == text
    else:
        assert value == api_value


def test_an_unknown_choice_is_refused_by_every_front(tmp_path: Path) -> None:
    for convention in CONVENTIONS:
        if not convention.choices or convention.open:
            continue
        with pytest.raises(SystemExit):
            from_cli(convention.name, "sideways")
        with pytest.raises(UsageError, match=f"must be one of {', '.join(convention.values)}"):
            from_config(tmp_path, convention.name, "sideways", "sideways")
        with pytest.raises(UsageError, match="sideways"):
            make_evaluation(**{convention.name: "sideways"})


def test_unknown_api_options_are_refused_by_name() -> None:
    with pytest.raises(UsageError, match=r"unknown option.*'tie'.*options are k, profile, gain"):
        make_evaluation(tie="average")


def test_defaults_are_the_registry_s() -> None:
    evaluation = Evaluation()
    for convention in CONVENTIONS:
        value = getattr(evaluation, convention.attribute)
        part = convention.field.partition(".")[2]
        value = getattr(value, part) if part else value
        assert (str(value) if convention.name == "gain" else value) == convention.default
        if convention.choices:
            assert convention.default in convention.values


def test_the_reference_shows_the_registry() -> None:
    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- registry: begin[^\n]*-->\n(.*?)<!-- registry: end -->", text, re.S)
    assert block, "docs/reference.md lost its registry markers"
    stale = "docs/reference.md is stale: run make generate"
    assert block.group(1) == conventions_table(), stale
    options = re.search(r"<!-- options: begin[^\n]*-->\n(.*?)<!-- options: end -->", text, re.S)
    assert options and options.group(1) == options_table(), stale
    for option in OPTIONS:  # every option is there
        assert f"| `{option.flag}" in options.group(1)
    for convention in CONVENTIONS:  # every convention and choice is there (the generator's own check)
        row = next(line for line in block.group(1).splitlines() if line.startswith(f"| `{convention.flag}"))
        assert all(choice in row for choice in convention.values)


def test_help_all_lists_every_choice_with_its_line() -> None:
    shown = run_cli("evaluate", "--help-all")
    assert shown.returncode == 0
    text = "".join(shown.stdout.split())  # argparse wraps lines at spaces and hyphens
    for convention in CONVENTIONS:
        for choice in convention.choices:
            default = " (default)" if choice.value == convention.default else ""
            assert "".join(f"{choice.value}{default}: {choice.description}".split()) in text


def test_sql_variables_spark_types_and_refusals_are_the_registry_s() -> None:
    names = [variable.name for variable in SQL_VARIABLES]
    assert set(names) <= set(VARIABLES)
    assert set(evaluation_variables(Evaluation())) == set(names)
    assert {
        **{variable.name: variable.spark_type for variable in SQL_VARIABLES},
        **SUMMARY_VARIABLE_TYPES,
    } == transpile.VARIABLE_TYPES
    read = set()
    for path in (ROOT / "sql").rglob("*.sql"):
        read |= set(re.findall(r"getvariable\('([a-z_]+)'\)", path.read_text()))
    assert set(names) <= read, f"variables no SQL file reads: {set(names) - read}"
    for convention in CONVENTIONS:
        for choice in convention.choices:
            refused = transpile.UNSUPPORTED.get(convention.variables[0].name, {}).get(choice.value)
            assert refused == (choice.spark_refuses or None)
            if refused:
                with pytest.raises(UsageError, match="not supported on the spark engine"):
                    transpile.check_supported({convention.variables[0].name: choice.value})


def test_measure_columns_are_the_registry_s() -> None:
    assert ("query_id", "k", *MEASURE_NAMES) == PER_QUERY_COLUMNS
    assert len(set(MEASURE_NAMES)) == len(MEASURES)
    connection = duckdb.connect()
    connection.execute(
        "create table per_query as select 'q' as query_id, 5 as k, "
        + ", ".join(f'1.0 as "{name}"' for name in MEASURE_NAMES)
        + ", 1.0 as ndcg_min, 1.0 as ndcg_max, false as ties_straddle_k"
    )
    connection.execute((ROOT / "sql" / "summary.sql").read_text())
    assert connection.table("summary").columns == [
        "k", "queries", *MEASURE_NAMES, "ndcg_min", "ndcg_max", "tie_sensitive_queries"
    ]  # fmt: skip


def test_a_new_measure_is_named_in_its_own_sql_step_only() -> None:
    """A measure is listed once in SQL, where it is computed (sql/measures/); the steps after it
    (the per-query table) and the summary take every measure through a star, so they never
    name one but ndcg (the primary measure, which decides who is averaged)."""
    after = PER_QUERY_STEPS[PER_QUERY_STEPS.index("measures/measures.sql") + 1 :]
    assert after == ("measures/per_query.sql",)
    for file_name in (*after, "summary.sql"):
        code = "\n".join(line.split("--")[0] for line in (ROOT / "sql" / file_name).read_text().splitlines())
        named = {name for name in MEASURE_NAMES if re.search(rf'\b"?{name}"?\b', code)}
        assert named <= {"ndcg"}, f"sql/{file_name} lists {named}"


def test_no_step_before_the_counters_names_a_signal() -> None:
    """The ranking carries each rank's label once; a signal is the registry's data, and the steps
    that name the signals and counters are generated from it (pipeline/counter_steps.py): no
    hand-written step between the judgments and the counters names one (the curves name the
    signals they read, as the measures steps the counters)."""
    between = [s for s in PER_QUERY_STEPS if s.startswith(("ranking/", "counters/")) and s not in GENERATED_STEPS]
    assert "ranking/rankings.sql" in between and "counters/sums_at_cutoffs.sql" in between
    for file_name in between:
        code = "\n".join(line.split("--")[0] for line in (ROOT / "sql" / file_name).read_text().splitlines())
        # as a column (t.relevant, ... as relevant), or a signal compared with its name
        named = {
            name
            for name in SIGNAL_NAMES
            if re.search(rf"(\.|\bas\s+){name}\b|signal\s*(=|in\s*\([^)]*)\s*'{name}'", code)
        }
        assert not named, f"sql/{file_name} names the signals {named}"


def test_every_step_has_its_polars_twin_of_the_same_name() -> None:
    """Each SQL step sql/<stage>/<step>.sql is a function ``<step>`` of the Polars engine's
    module of its stage (pipeline/engines/polars/<stage>.py; the last, per_query, the package's
    ``per_query``), so the two engines read side by side."""
    for file_name in PER_QUERY_STEPS[:-1]:
        stage, _, step = file_name.removesuffix(".sql").partition("/")
        module = importlib.import_module(f"pipeline.engines.polars.{stage}")
        assert callable(getattr(module, step, None)), file_name
    assert PER_QUERY_STEPS[-1] == "measures/per_query.sql" and callable(polars_engine.per_query)


def test_the_counters_are_the_registry_s() -> None:
    """The generated counter steps give a column per counter, exactly the registry's COUNTERS: the
    rank counters at each cutoff (sql/counters/sums_at_cutoffs.sql), the per-query ones
    (sql/counters/counters.sql); each measure reads only counters of the registry."""
    connection = duckdb.connect()
    connection.execute(
        "create view run as select 'q' as query_id, 'd' as doc_id, 1.0 as score, 0 as arrival, null as input_rank, "
        "1.0 as doc_weight"
    )
    connection.execute(
        "create view qrels as select 'q' as query_id, 'd' as doc_id, 1 as relevance, null::varchar as subtopic"
    )
    connection.execute("SET VARIABLE ks = [1]")
    for file_name in PER_QUERY_STEPS[:-1]:
        connection.execute((ROOT / "sql" / file_name).read_text())
    per_query = set(connection.table("counters").columns) - {"query_id"}
    per_rank = set(connection.table("sums_at_cutoffs").columns) - {"ranking", "query_id", "k", "cg", "dcg"}
    assert per_query | per_rank == {counter.name for counter in COUNTERS}
    for measure in MEASURES:
        assert set(measure.counters) <= {counter.name for counter in COUNTERS}
    assert {counter.signal for counter in COUNTERS} <= {*SIGNAL_NAMES, RETRIEVED}


@pytest.mark.parametrize("family", list(dict.fromkeys(m.selected_by for m in MEASURES if m.selected_by != "ndcg")))
def test_each_measure_reads_only_the_counters_it_names(family: str) -> None:
    """The Polars engine computes only the counters the asked measures name (spec.Measure.counters),
    so a formula reading another one fails here, asked for alone."""

    run, qrels = frames([("q", "a", 2.0), ("q", "b", 1.0)], [("q", "b", 1), ("q", "c", 0)])
    table = polars_engine.per_query(run, qrels, Evaluation(cutoffs=(1,), measures=(family,))).collect()
    # every column of the family (a family such as iprec_at_recall has no column of its name)
    assert {m.name for m in MEASURES if m.selected_by == family} <= set(table.columns)


def test_profiles_and_describe_come_from_the_registry() -> None:
    header = profiles_table().splitlines()[0]
    assert [c.strip() for c in header.strip("|").split("|")][1:-1] == [c.name for c in CONVENTIONS if c.in_profiles]
    for profile in PROFILES.values():
        assert {name for name, _ in profile.settings} <= {c.attribute for c in CONVENTIONS}
    described = Evaluation(ties="average", ideal="retrieved").describe()
    assert described["ties"] == "score desc, tied gains averaged"
    assert described["ideal"] == "the retrieved documents with positive gain"


def test_every_convention_without_choices_has_an_example() -> None:
    bare = [c.name for c in CONVENTIONS if not c.choices and not c.switch and not c.open and not c.examples]
    assert bare == ["measures"]  # its values are the measures' names, tried by tests/test_measure_names.py
