import logging

import pytest

from jobarchive.config import ConfigError, Flag, load

LOG_SUCCEEDED = "JOBARCHIVE_LOG_SUCCEEDED"


@pytest.mark.parametrize(("raw", "value"), [("true", True), ("FALSE", False), ("True", True)])
def test_a_flag_reads_true_or_false_in_any_case_without_a_word(
    raw: str, value: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="jobarchive.config")
    assert load({LOG_SUCCEEDED: raw}).log_succeeded is value
    assert not caplog.records


def test_a_flag_unset_or_empty_is_its_default() -> None:
    assert load({}).log_succeeded is False
    assert load({LOG_SUCCEEDED: ""}).log_succeeded is False
    assert Flag("X", default=True).read({}) is True


@pytest.mark.parametrize(("raw", "value", "new"), [("1", True, "true"), ("0", False, "false")])
def test_the_old_spelling_is_still_read_with_a_warning_naming_the_new(
    raw: str, value: bool, new: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="jobarchive.config")
    assert load({LOG_SUCCEEDED: raw}).log_succeeded is value
    [record] = caplog.records
    assert record.name.startswith("jobarchive.config")
    assert record.levelno == logging.WARNING
    assert f"{LOG_SUCCEEDED}={raw} is the old spelling" in record.getMessage()
    assert f"write {LOG_SUCCEEDED}={new}" in record.getMessage()


@pytest.mark.parametrize("raw", ["yes", "on", "2", " true", "01"])
def test_anything_else_is_refused_naming_the_variable_and_the_values(raw: str) -> None:
    with pytest.raises(ConfigError, match=f"^{LOG_SUCCEEDED}: {raw!r} is not true or false$"):
        load({LOG_SUCCEEDED: raw})


def test_a_flag_without_an_old_spelling_refuses_0_and_1() -> None:
    variable = "JOBARCHIVE_API_TLS_SELF_SIGNED"
    for raw in ("0", "1"):
        with pytest.raises(ConfigError, match=f"^{variable}: '{raw}' is not true or false$"):
            load({variable: raw})
