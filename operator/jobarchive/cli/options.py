"""The commands' options, made from the read side's parameter tables (``queries.params``):
the API's query parameters as ``--flags`` (``created_since`` as ``--created-since``),
each with the table's one description, typed as the table says (a time parsed as the
API parses one) and checked by the same queries. Only the CLI's own spellings are
kept here: short flags and a boolean's "no"."""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from jobarchive.reading import queries
from jobarchive.reading.queries import Param

F = TypeVar("F", bound=Callable[..., Any])
OUTPUTS = click.Choice(["table", "json"])
SHORT = {"namespace": "-n"}
# A boolean filter as a pair of flags: the table's name for true, this one for false.
FALSE = {"in_cluster": "--gone"}


def flag(param: Param) -> str:
    """The option a parameter is on the command line: ``--created-since``."""
    return "--" + param.name.replace("_", "-")


def options(params: Sequence[Param]) -> Callable[[F], F]:
    """A command's options for these parameters, in the table's order, each passed to
    the command under its ``Param.key``."""

    def decorate(command: F) -> F:
        for param in reversed(params):
            command = _option(param)(command)
        return command

    return decorate


def output_option(command: F) -> F:
    """The ``--output`` option: a table, or the rows as JSON under the seed's names."""
    return click.option("--output", "-o", type=OUTPUTS, default="table", show_default=True)(command)


def _option(param: Param) -> Callable[[F], F]:
    short = SHORT.get(param.name)
    names = [flag(param), *([short] if short else []), param.key]
    if param.type == "boolean":
        names = [f"{flag(param)}/{FALSE[param.name]}", param.key]
        return click.option(*names, default=None, help=param.description)
    if param.type == "integer":
        return click.option(*names, type=int, help=param.description)
    if param.type == "time":
        return click.option(*names, callback=_time, help=param.description)
    return click.option(*names, help=param.description)


def _time(_: click.Context, option: click.Parameter, value: str | None) -> Any:
    """A time option's value parsed as the API parses one, refused as it refuses one."""
    if value is None:
        return None
    try:
        return queries.parse_time(value, option.opts[0])
    except queries.BadQuery as exc:
        raise click.UsageError(str(exc)) from None
