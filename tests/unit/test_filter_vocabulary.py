"""One filter vocabulary: the parameter tables of ``reading.params`` are what the list
queries hold and what the CLI's options are, each with its one description; and the
kinds a filter may name are the settings' kinds, computed once."""

import dataclasses
import datetime
import typing

import click
import pytest

from jobarchive import cli, config
from jobarchive.reading import params, queries
from tests.support.kinds import EXTRA_KINDS

TYPES = {"string": str | None, "time": datetime.datetime | None, "boolean": bool | None}
COMMANDS = {
    "jobs": params.NAMED_JOB_PARAMS + queries.PAGE,
    "events": queries.EVENT_PARAMS + queries.PAGE,
    "job": queries.DETAIL_PARAMS,
    "logs": queries.LOG_PARAMS,
    "stats": queries.STATS_PARAMS,
}


@pytest.mark.parametrize(
    ("query", "table"),
    [(queries.JobQuery, queries.JOB_PARAMS), (queries.EventQuery, queries.EVENT_PARAMS)],
)
def test_a_lists_query_has_a_field_of_its_type_for_each_filter_of_its_table_and_no_other(
    query: type, table: tuple[queries.Param, ...]
) -> None:
    hints = typing.get_type_hints(query)
    fields = [(field.name, hints[field.name]) for field in dataclasses.fields(query)]
    # A cluster is one asked for, or the clusters the caller may read (decision 36).
    typed = {**TYPES, "cluster": params.Clusters}
    assert fields == [(param.key, typed.get(param.key, TYPES[param.type])) for param in table]


@pytest.mark.parametrize(("name", "table"), COMMANDS.items())
def test_a_commands_options_are_its_tables_parameters_with_their_one_description(
    name: str, table: tuple[queries.Param, ...]
) -> None:
    command = cli.main.commands[name]
    options = [
        option
        for option in command.params
        if isinstance(option, click.Option) and option.name != "output"
    ]
    assert [option.name for option in options] == [param.key for param in table]
    for option, param in zip(options, table, strict=True):
        assert option.opts[0] == "--" + param.name.replace("_", "-")
        assert option.help == param.description


def test_the_cli_keeps_its_own_spellings_of_the_namespace_and_of_gone() -> None:
    jobs = {option.name: option for option in cli.main.commands["jobs"].params}
    assert jobs["namespace"].opts == ["--namespace", "-n"]
    assert (jobs["in_cluster"].opts, jobs["in_cluster"].secondary_opts) == (
        ["--in-cluster"],
        ["--gone"],
    )


def test_the_kinds_a_filter_may_name_are_those_of_the_settings() -> None:
    settings = config.load(EXTRA_KINDS)
    known = queries.known_kinds(settings.kinds)
    assert {"LLMJob", "TFJob", "Job"} <= set(known.jobs)
    assert {"LLMJob", "Pod", "RayCluster"} <= set(known.objects)
    assert "LLMJob" not in queries.BUILTIN.jobs + queries.BUILTIN.objects
    assert known.jobs == tuple(sorted(known.jobs))
