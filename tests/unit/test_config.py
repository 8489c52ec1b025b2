import dataclasses
import json
import re
import typing

import pytest

from jobarchive.config import (
    BOUNDED,
    DEFAULT_DB_URL,
    DEFAULTS,
    FLAGS,
    ConfigError,
    Flag,
    Numbers,
    load,
    matches,
    redact_url,
)
from jobarchive.config.numbers import TABLE
from testbed.operator import REPO

# The one configuration table, held to the code by the tests below.
CONFIGURATION_PAGE = REPO / "docs" / "configuration.md"


def test_without_configuration_the_embedded_sqlite_file_is_used() -> None:
    settings = load({})
    assert settings.db_url == DEFAULT_DB_URL == "sqlite://jobarchive.sqlite3"
    assert settings.region is None
    assert len(settings.kinds) == 16


def test_jobarchive_db_url_is_taken_as_given() -> None:
    url = "mysql://archiver:s3cret@db.example:3306/archive"
    assert load({"JOBARCHIVE_DB_URL": url, "MYSQL_HOST": "ignored"}).db_url == url


def test_kubedl_mysql_variables_build_a_url_with_the_password_quoted() -> None:
    settings = load(
        {
            "MYSQL_HOST": "mysql.kubedl",
            "MYSQL_PORT": "3307",
            "MYSQL_DB_NAME": "kubedl",
            "MYSQL_USER": "kubedl",
            "MYSQL_PASSWORD": "p@ss:w/rd?",
        }
    )
    assert settings.db_url == "mysql://kubedl:p%40ss%3Aw%2Frd%3F@mysql.kubedl:3307/kubedl"
    assert "p%40ss" not in settings.db_url_redacted
    assert settings.db_url_redacted == "mysql://kubedl:***@mysql.kubedl:3307/kubedl"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"JOBARCHIVE_DB_URL": "postgres://h/db"}, "JOBARCHIVE_DB_URL"),
        ({"JOBARCHIVE_DB_URL": "mysql://root:pw@h:notaport/db"}, "JOBARCHIVE_DB_URL"),
        ({"JOBARCHIVE_DB_URL": "mysql://root:pw@h:3306/"}, "JOBARCHIVE_DB_URL"),
        ({"JOBARCHIVE_DB_URL": "mysql:///db"}, "JOBARCHIVE_DB_URL"),
        ({"JOBARCHIVE_DB_URL": "sqlite://"}, "JOBARCHIVE_DB_URL"),
        ({"MYSQL_HOST": "h", "MYSQL_PORT": "99999"}, "MYSQL_PORT"),
        ({"MYSQL_HOST": "h", "MYSQL_DB_NAME": ""}, "MYSQL_DB_NAME"),
        ({"JOBARCHIVE_EXTRA_KINDS": "{"}, "JOBARCHIVE_EXTRA_KINDS"),
        ({"JOBARCHIVE_EXTRA_KINDS": "{}"}, "JOBARCHIVE_EXTRA_KINDS"),
        ({"JOBARCHIVE_EXTRA_KINDS": '[{"group": "x"}]'}, "JOBARCHIVE_EXTRA_KINDS"),
    ],
)
def test_a_bad_setting_fails_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load(env)


def test_a_bad_url_error_never_shows_the_password() -> None:
    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": "mysql://root:hunter2@h:3306/"})
    assert "hunter2" not in str(error.value)


def test_extra_kinds_are_added_to_the_registry() -> None:
    extra = {
        "group": "example.com",
        "version": "v1",
        "plural": "trainjobs",
        "kind": "TrainJob",
        "replica_specs_key": "replicaSpecs",
        "main_container": "trainer",
    }
    settings = load({"JOBARCHIVE_EXTRA_KINDS": json.dumps([extra])})
    found = settings.kinds.find("example.com/v1", "TrainJob")
    assert found is not None and found.main_container == "trainer"


def test_an_extra_kind_that_repeats_a_builtin_is_refused() -> None:
    extra = {
        "group": "kubeflow.org",
        "version": "v1",
        "plural": "tfjobs",
        "kind": "TFJob",
        "replica_specs_key": "tfReplicaSpecs",
        "main_container": "tensorflow",
    }
    with pytest.raises(ConfigError, match="listed twice"):
        load({"JOBARCHIVE_EXTRA_KINDS": json.dumps([extra])})


def test_kinds_are_found_by_group_whatever_the_version() -> None:
    kinds = load({}).kinds
    assert kinds.find("kubeflow.org/v1beta1", "TFJob") is kinds.find("kubeflow.org/v1", "TFJob")
    kubedl = kinds.find("training.kubedl.io/v1alpha1", "TFJob")
    assert kubedl is not None and (kubedl.group, kubedl.kind) == ("training.kubedl.io", "TFJob")
    assert kinds.find("batch/v1", "Job") is None
    assert kinds.find(None, "TFJob") is None


def test_redacting_a_url_without_password_changes_nothing() -> None:
    assert redact_url("sqlite:///tmp/x.sqlite3") == "sqlite:///tmp/x.sqlite3"


def test_write_path_settings_have_defaults_and_bounds() -> None:
    settings = load({})
    assert (settings.batch_size, settings.batch_delay, settings.queue_size, settings.writers) == (
        500,
        0.005,
        10_000,
        2,
    )
    tuned = load(
        {
            "JOBARCHIVE_BATCH_SIZE": "1000",
            "JOBARCHIVE_BATCH_DELAY_MS": "0",
            "JOBARCHIVE_QUEUE_SIZE": "50",
            "JOBARCHIVE_WRITERS": "4",
        }
    )
    assert (tuned.batch_size, tuned.batch_delay, tuned.queue_size, tuned.writers) == (
        1000,
        0,
        50,
        4,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("JOBARCHIVE_BATCH_SIZE", "0"),
        ("JOBARCHIVE_WRITERS", "many"),
        ("JOBARCHIVE_QUEUE_SIZE", "-1"),
    ],
)
def test_a_bad_write_path_setting_is_named(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load({name: value})


def test_metrics_and_peering_settings_have_defaults_and_bounds() -> None:
    settings = load({})
    assert (settings.metrics_port, settings.peering_lifetime) == (8000, 60)
    tuned = load({"JOBARCHIVE_METRICS_PORT": "0", "JOBARCHIVE_PEERING_LIFETIME": "5"})
    assert (tuned.metrics_port, tuned.peering_lifetime) == (0, 5)
    with pytest.raises(ConfigError, match="JOBARCHIVE_METRICS_PORT"):
        load({"JOBARCHIVE_METRICS_PORT": "65536"})
    with pytest.raises(ConfigError, match="JOBARCHIVE_PEERING_LIFETIME"):
        load({"JOBARCHIVE_PEERING_LIFETIME": "1"})


def test_the_batch_job_selector_is_off_by_default_and_parsed_like_kubectls() -> None:
    assert load({}).batch_job_selector is None
    selector = load({"JOBARCHIVE_BATCH_JOB_SELECTOR": "team=ml, archive"}).batch_job_selector
    assert selector == {"team": "ml", "archive": None}
    assert matches(selector, {"team": "ml", "archive": "yes", "other": "x"})
    assert not matches(selector, {"team": "ml"})
    assert not matches(selector, {"team": "web", "archive": ""})
    for bad in ("team!=ml", "=ml", "team=", "a,,b"):
        with pytest.raises(ConfigError, match="JOBARCHIVE_BATCH_JOB_SELECTOR"):
            load({"JOBARCHIVE_BATCH_JOB_SELECTOR": bad})


def test_the_configuration_table_documents_every_variable_the_code_reads() -> None:
    source = "".join(
        p.read_text() for p in (REPO / "operator" / "jobarchive" / "config").glob("*.py")
    )
    table = CONFIGURATION_PAGE.read_text()
    read = set(re.findall(r'"((?:JOBARCHIVE|MYSQL)_[A-Z_]+|REGION)"', source))
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))
    assert read == documented


def test_the_configuration_table_gives_each_numeric_setting_its_default_and_range() -> None:
    table = CONFIGURATION_PAGE.read_text()
    for bounded in BOUNDED.values():
        rows = re.findall(
            rf"^\| `{bounded.variable}` \| `(\d+)`[^|]* \| ([\d,]+)\.\.([\d,]+) \|", table, re.M
        )
        numbers = [[int(group.replace(",", "")) for group in row] for row in rows]
        # One row, with the default and range: none, or two, would be a fault of the table.
        assert numbers == [[bounded.default, bounded.low, bounded.high]], bounded.variable


def test_the_configuration_table_gives_each_flag_its_default_and_values() -> None:
    table = CONFIGURATION_PAGE.read_text()
    assert FLAGS
    for flag in FLAGS.values():
        rows = re.findall(
            rf"^\| `{flag.variable}` \| `(true|false)` \| `true`, `false` \|", table, re.M
        )
        assert rows == [str(flag.default).lower()], flag.variable


def test_every_boolean_setting_of_the_table_takes_true_or_false_in_any_case() -> None:
    table = CONFIGURATION_PAGE.read_text()
    booleans = re.findall(r"^\| `([A-Z_]+)` \| `(?:true|false)` \| `true`, `false` \|", table, re.M)
    assert set(booleans) == {flag.variable for flag in FLAGS.values()} | {
        "JOBARCHIVE_API_TLS_SELF_SIGNED"
    }
    for variable in booleans:
        load({variable: "TRUE"})
        load({variable: "False"})
        with pytest.raises(ConfigError, match=f"^{variable}: 'yes' is not true or false$"):
            load({variable: "yes"})
    # No setting is a number standing for a boolean any more.
    assert not [b.variable for b in BOUNDED.values() if (b.low, b.high) == (0, 1)]


def test_each_field_of_numbers_has_one_entry_of_the_table_and_its_type() -> None:
    hints = typing.get_type_hints(Numbers)
    assert list(TABLE) == [field.name for field in dataclasses.fields(Numbers)]
    variables = [entry.variable for entry in TABLE.values()]
    assert len(set(variables)) == len(variables)
    for name, entry in TABLE.items():
        # A flag is a bool, a scaled number a fraction: what ``entry.read`` gives.
        if isinstance(entry, Flag):
            assert hints[name] is bool, name
        elif entry.per_unit != 1:
            assert hints[name] is float, name
        else:
            assert hints[name] in (int, float), name
        # An int is a float as typing has it (and as 10 seconds are).
        taken = (int, float) if hints[name] is float else hints[name]
        assert isinstance(getattr(DEFAULTS, name), taken), name


def test_the_api_binds_every_interface_and_reviews_its_callers_by_default() -> None:
    settings = load({})
    assert (settings.api_host, settings.api_auth) == ("0.0.0.0", "kubernetes")
    tuned = load({"JOBARCHIVE_API_HOST": "::1", "JOBARCHIVE_API_AUTH": "none"})
    assert (tuned.api_host, tuned.api_auth) == ("::1", "none")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("JOBARCHIVE_API_HOST", "api.example", "'api.example' is not an IP address"),
        ("JOBARCHIVE_API_HOST", "0.0.0.0:8081", "is not an IP address"),
        ("JOBARCHIVE_API_AUTH", "token", "'token' is not one of kubernetes, none"),
        ("JOBARCHIVE_API_AUTH", "Kubernetes", "is not one of kubernetes, none"),
    ],
)
def test_a_bad_api_setting_is_named(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"{name}: .*{re.escape(message)}"):
        load({name: value})
