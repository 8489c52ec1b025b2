"""The row shapes the converters build and the store takes are the tables' columns."""

import typing

import pytest

from jobarchive.core.rows import (
    AttemptRow,
    EventRow,
    JobRow,
    LogTailRow,
    PodRow,
    QuotaRow,
    WaitRow,
)
from jobarchive.storage.kueue import Attempt, Quota, Wait
from jobarchive.storage.models import WRITTEN, Event, Job, LogTail, Pod, Stamped

SHAPES = [
    (JobRow, Job),
    (PodRow, Pod),
    (EventRow, Event),
    (LogTailRow, LogTail),
    (AttemptRow, Attempt),
    (WaitRow, Wait),
    (QuotaRow, Quota),
]


def keys(shape: type) -> set[str]:
    hints = typing.get_type_hints(shape)
    return set(hints)


@pytest.mark.parametrize(("shape", "model"), SHAPES)
def test_a_row_shape_names_exactly_its_tables_columns_but_the_id(
    shape: type, model: type[Stamped]
) -> None:
    columns = set(model._meta.fields_db_projection.values()) - {"id"}
    assert keys(shape) == columns
    assert keys(shape) == set(WRITTEN[model].columns)


@pytest.mark.parametrize(("shape", "model"), SHAPES)
def test_a_column_may_be_none_in_a_row_only_where_the_table_allows_null(
    shape: type, model: type[Stamped]
) -> None:
    hints = typing.get_type_hints(shape)
    # gmt_created may be None until the store stamps it with the time of the write.
    optional = {name for name, hint in hints.items() if type(None) in typing.get_args(hint)} - {
        "gmt_created"
    }
    nullable = {name for name, field in model._meta.fields_map.items() if field.null}
    assert optional == nullable
