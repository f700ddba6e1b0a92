"""The input, validation, execution and job options of pipeline/registry/ (OPTIONS) are declared
once: each is a flag of the commands of its group, a config key, a keyword of the API functions
of its group and a field of the job, and a value means the same through every front."""

from __future__ import annotations

import operator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from pipeline import api, cli
from pipeline.cli_flags import build_parser, parse_args, subparser
from pipeline.engines import Execution
from pipeline.errors import UsageError
from pipeline.io.read import DOC, LABEL, QUERY, SCORE, Columns
from pipeline.job import Job
from pipeline.registry import OPTION, OPTION_GROUPS, OPTIONS, Evaluation, InputChecks, Option
from pipeline.units import option_values


def cases() -> list[tuple[Option, str, Any]]:
    """(option, flag text, API value) for every choice of every option, each example of the
    registry's of an option without choices, and a switch given."""
    found: list[tuple[Option, str, Any]] = []
    for option in OPTIONS:
        found += [(option, choice, choice) for choice in option.choices]
        if option.switch:
            found.append((option, "true", True))
        found += [(option, *example) for example in option.examples]
    return found


def held(job: Job, option: Option) -> Any:
    """The value the job holds for ``option`` (``execution.threads``: its execution's threads)."""
    return operator.attrgetter(option.field)(job)


def job_of(values: dict[str, Any]) -> Job:
    return Job(run="run.parquet", qrels=None, evaluation=Evaluation(), **option_values(values))


def flag_argv(command: str, option: Option, text: str) -> list[str]:
    return [command, option.flag] if option.switch else [command, option.flag, text]


def from_flag(command: str, option: Option, text: str) -> Job:
    return job_of(cli._options(parse_args(build_parser(), flag_argv(command, option, text)), command))


def from_config(tmp_path: Path, key: str, option: Option, text: str, api_value: Any) -> Job:
    value = str(api_value).lower() if option.switch else text if option.parse else f'"{text}"'
    config = tmp_path / f"{key}.toml"
    config.write_text(f"{key} = {value}\n")
    parser = build_parser()
    argv = ["evaluate", "--config", str(config)]
    return job_of(cli._options(cli._apply_config(parser, parse_args(parser, argv), argv), "evaluate"))


def from_api(function: str, option: Option, value: Any) -> Any:
    """What ``function`` holds for ``option`` given as its keyword."""
    return operator.attrgetter(option.field)(api._given(function, {option.name: value}, None))


@pytest.mark.parametrize(
    ("option", "text", "api_value"),
    cases(),
    ids=lambda value: value.name if isinstance(value, Option) else str(value),
)
def test_every_value_means_the_same_by_flag_config_and_api(
    tmp_path: Path, option: Option, text: str, api_value: Any
) -> None:
    group = OPTION_GROUPS[option.group]
    for command in group.commands:
        assert held(from_flag(command, option, text), option) == api_value
    for key in (option.name, option.name.replace("_", "-")):
        assert held(from_config(tmp_path, key, option, text, api_value), option) == api_value
    for function in group.functions:
        assert from_api(function, option, api_value) == api_value
    # the job built from the API's keyword holds the same
    assert held(job_of({option.name: api_value}), option) == api_value


def test_every_option_is_taken_where_its_group_says_and_refused_elsewhere() -> None:
    parser = build_parser()
    for option in OPTIONS:
        group = OPTION_GROUPS[option.group]
        for command in ("evaluate", "validate"):
            flags = {flag for action in subparser(parser, command)._actions for flag in action.option_strings}
            assert (option.flag in flags) == (command in group.commands), (option.name, command)
        for function in ("per_query", "check", "evaluate"):
            if function in group.functions:
                api._given(function, {option.name: option.default}, None)
            else:
                with pytest.raises(UsageError, match=rf"{function}\(\) got unknown option\(s\) '{option.name}'"):
                    api._given(function, {option.name: option.default}, None)


def test_defaults_are_the_registry_s_by_every_front() -> None:
    job = Job(run="run.parquet", qrels=None, evaluation=Evaluation())
    defaults = cli._options(parse_args(build_parser(), ["evaluate"]), "evaluate")
    for option in OPTIONS:
        assert held(job, option) == option.default, option.name
        assert defaults[option.name] == option.default, option.name
        for function in OPTION_GROUPS[option.group].functions:
            assert operator.attrgetter(option.field)(api._given(function, {}, None)) == option.default
    assert Columns() == Columns(QUERY, DOC, SCORE, LABEL)
    assert InputChecks().warn_results_over == OPTION["warn_results_over"].default == 1000
    # the validators take the validation options whole: InputChecks holds exactly them
    validation = {option.field.partition(".")[2] for option in OPTIONS if option.group == "validation"}
    assert {f.name for f in fields(InputChecks)} == validation


def test_the_typed_holders_are_the_registry_s_options() -> None:
    """Each object holding options by part has exactly the registry's parts as fields."""
    for holder, kind in (("checks", InputChecks), ("execution", Execution), ("columns", Columns)):
        parts = {option.field.partition(".")[2] for option in OPTIONS if option.holder == holder}
        assert parts == {field.name for field in fields(kind)}
    job_fields = {field.name for field in fields(Job)}
    assert {option.holder for option in OPTIONS} <= job_fields


def test_an_unknown_choice_is_refused_by_flag_and_config(tmp_path: Path) -> None:
    for option in OPTIONS:
        if not option.choices:
            continue
        with pytest.raises(SystemExit):
            from_flag("evaluate", option, "sideways")
        with pytest.raises(UsageError, match=f"must be one of {', '.join(option.choices)}"):
            from_config(tmp_path, option.name, option, "sideways", "sideways")


def test_columns_are_named_one_way_in_the_api() -> None:
    given = api._given("evaluate", {"query_col": "q"}, None)
    assert given.columns == Columns(query="q")
    assert api._given("check", {}, Columns(doc="d")).columns == Columns(doc="d")
    with pytest.raises(UsageError, match=r"got columns= and query_col"):
        api._given("per_query", {"query_col": "q"}, Columns(doc="d"))


def test_conventions_are_given_one_way_in_the_api() -> None:
    with pytest.raises(UsageError, match=r"evaluate\(\) got evaluation=Evaluation\(\.\.\.\) and the option\(s\) 'k'"):
        api.evaluate("run.parquet", evaluation=Evaluation(), k=5)
    with pytest.raises(UsageError, match=r"check\(\) got unknown option\(s\) 'ties'"):
        api.check("run.parquet", ties="average")


def test_every_option_without_choices_has_an_example() -> None:
    """An option that is not a switch and has no choices is tried through every front by its
    registry examples (and the reference shows the first): one without any is untested."""
    bare = [option.name for option in OPTIONS if not option.choices and not option.switch and not option.examples]
    assert not bare
