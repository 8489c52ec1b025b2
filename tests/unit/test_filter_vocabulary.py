"""One filter vocabulary: the parameter tables of ``queries.params`` are what the list
queries hold; and the kinds a filter may name are the settings' kinds."""

import dataclasses
import datetime
import typing

import pytest

from jobarchive import config
from jobarchive.reading import queries
from tests.support.kinds import EXTRA_KINDS

TYPES = {"string": str | None, "time": datetime.datetime | None, "boolean": bool | None}


@pytest.mark.parametrize(
    ("query", "table"),
    [(queries.JobQuery, queries.JOB_PARAMS), (queries.EventQuery, queries.EVENT_PARAMS)],
)
def test_a_lists_query_has_a_field_of_its_type_for_each_filter_of_its_table_and_no_other(
    query: type, table: tuple[queries.Param, ...]
) -> None:
    hints = typing.get_type_hints(query)
    fields = [(field.name, hints[field.name]) for field in dataclasses.fields(query)]
    assert fields == [(param.key, TYPES[param.type]) for param in table]


def test_the_kinds_a_filter_may_name_are_those_of_the_settings() -> None:
    settings = config.load(EXTRA_KINDS)
    known = queries.known_kinds(settings.kinds)
    assert {"LLMJob", "TFJob", "Job"} <= set(known.jobs)
    assert {"LLMJob", "Pod", "RayCluster"} <= set(known.objects)
    assert "LLMJob" not in queries.BUILTIN.jobs + queries.BUILTIN.objects
    assert known.jobs == tuple(sorted(known.jobs))
