"""Where every query reads: the read side's own connection (``storage.readpool.reader``,
which ``read`` and ``bounded`` start from and raw SQL asks for itself), never the
writer's, so that no read, however slow or many, takes a connection the writer needs
(decision 16).
"""

from typing import Any, TypeVar

from pypika_tortoise.context import SqlContext
from pypika_tortoise.enums import Dialects
from pypika_tortoise.terms import Function as SqlFunction
from tortoise.expressions import Function
from tortoise.models import Model
from tortoise.queryset import QuerySet

from jobarchive.storage import readpool
from jobarchive.storage.models import Stamped

M = TypeVar("M", bound=Model)
S = TypeVar("S", bound=Stamped)


def read(model: type[M]) -> "QuerySet[M]":
    """Every row of ``model``, read through the read side's connection."""
    return model.all(using_db=readpool.reader())


class _SqlHead(SqlFunction):
    def __init__(self, term: Any, length: int, alias: str | None = None) -> None:
        super().__init__("SUBSTR", term, 1, length, alias=alias)

    def get_function_sql(self, ctx: SqlContext) -> str:
        if ctx.dialect == Dialects.SQLITE:
            return str(self.get_arg_sql(self.args[0], ctx))
        return str(super().get_function_sql(ctx))


class Head(Function):
    """The first characters of a text column, cut by MySQL's SUBSTR. SQLite's stops at
    a NUL, which a tenant's text may hold, so there the column is read whole (decision
    24)."""

    database_func = _SqlHead


def bounded(model: type[S]) -> "QuerySet[S]":
    """Whole rows of ``model`` whose free text and JSON the database cuts to one past
    their bounds, so that a row stored before they were kept costs a read no more than
    a new one; the shapes then cut them with a mark (``cutting.clip``)."""
    bounds = {**model.BOUNDS, **model.JSON_BOUNDS}
    others = [column for column in model._meta.db_fields if column not in bounds]
    heads = {column: Head(column, length + 1) for column, length in bounds.items()}
    return read(model).only(*others).annotate(**heads)
