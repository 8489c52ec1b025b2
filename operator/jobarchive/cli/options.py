"""The commands' options, made from the read side's parameter tables (``reading.params``):
the API's query parameters as ``--flags`` (``created_since`` as ``--created-since``),
each with the table's one description, typed as the table says (a time parsed as the
API parses one) and checked by the same queries, whose refusals name the flags typed.
Only the CLI's own spellings are kept here: short flags and a boolean's "no"."""

import datetime
import functools
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from jobarchive.reading.params import BadQuery, Param, parse_time

F = TypeVar("F", bound=Callable[..., Any])
OUTPUTS = ("table", "wide", "json")
# What each --output prints, said in --help.
PRINTS = {
    "table": "the columns that fit the terminal",
    "wide": "every column, whole",
    "json": "every field",
    "csv": "every figure, as CSV",
}
SHORT = {"namespace": "-n"}
# A boolean filter as a pair of flags: the table's name for true, this one for false.
FALSE = {"in_cluster": "--gone"}
# The group's options a command line to copy never shows: a URL may hold a password.
SECRET = {"db_url"}


class BadSetting(click.ClickException):
    """A setting that cannot be used (one the operator would refuse, a kubeconfig that
    does not work): one line, exit status 2 as for all bad input."""

    exit_code = 2


def flag(param: Param) -> str:
    """The option a parameter is on the command line: ``--created-since``."""
    return "--" + param.name.replace("_", "-")


def refused(exc: BadQuery, params: Sequence[Param]) -> click.UsageError:
    """A refusal of the read side as the command line says it: each parameter it names
    that is one of ``params`` named by its flag (``--name-contains``, not
    ``name_contains``), any other (a job's ``uid``, say) as the API names it."""
    flags = {param.name: flag(param) for param in params}
    return click.UsageError(exc.spelled(lambda name: flags.get(name, name)))


def options(params: Sequence[Param]) -> Callable[[F], F]:
    """A command's options for these parameters, in the table's order, each passed to
    the command under its ``Param.key``; what the read side refuses is told by flag."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except BadQuery as exc:
                raise refused(exc, params) from None

        decorated = cast(F, checked)
        for param in reversed(params):
            decorated = _option(param)(decorated)
        return decorated

    return decorate


def again(option: str, value: str) -> str:
    """This command line as the user typed it (each value as parsed), ``option`` set to
    ``value``: the command that shows the next page."""
    context = click.get_current_context()
    return elsewhere([context.info_name or "", *_given(context, {option}), option, value])


def elsewhere(words: Sequence[str]) -> str:
    """The command line of the command ``words`` (its name, then its options) with the
    options the user gave ``jobarchive`` itself, so that it reads the same archive."""
    root = click.get_current_context().find_root()
    return shlex.join([program(), *_given(root, SECRET), *words])


def program() -> str:
    """How this program is run again: by its name where the PATH finds it by that name,
    else by the path it was run by (``.venv/bin/jobarchive``), so that a command it
    prints runs as printed."""
    invoked = sys.argv[0]
    name = os.path.basename(invoked) or "jobarchive"
    found = shutil.which(name)
    if os.sep not in invoked or not os.path.exists(invoked):
        return name
    return name if found is not None and os.path.samefile(found, invoked) else invoked


def _given(context: click.Context, skipped: set[str]) -> list[str]:
    """The options and arguments given to ``context``'s command on its command line,
    but those ``skipped`` (by name or flag)."""
    words: list[str] = []
    for param in context.command.params:
        name = param.name or ""
        value = context.params.get(name)
        if context.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        if value is None or name in skipped or param.opts[0] in skipped:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif isinstance(value, bool):
            words.append(param.opts[0] if value else param.secondary_opts[0])
        elif isinstance(value, datetime.datetime):
            words += [param.opts[0], value.isoformat()]
        else:
            words += [param.opts[0], str(value)]
    return words


def output_option(command: F) -> F:
    """The ``--output`` option: a table that fits the terminal, every column of it
    whole (``wide``), or the rows as JSON under the seed's names."""
    return outputs(OUTPUTS)(command)


def outputs(choices: Sequence[str]) -> Callable[[F], F]:
    """An ``--output`` option of these ``choices``, the first the default."""
    return click.option(
        "--output",
        "-o",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help="; ".join(f"{choice}: {PRINTS[choice]}" for choice in choices) + ".",
    )


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
        return parse_time(value, option.opts[0])
    except BadQuery as exc:
        raise click.UsageError(str(exc)) from None
