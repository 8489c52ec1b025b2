"""A MySQL URL listing several hosts (decision 37): read in order, refused in one line
naming its variable when a host or port is bad, redacted whole, and handed to the
failover pool of both the writer's and the read side's connections."""

import pymysql
import pytest

from jobarchive.config import ConfigError, DbTls, first_host_url, hosts, load, redact_url
from jobarchive.config.database_url import url_secrets
from jobarchive.storage import database, failover, failures
from jobarchive.storage.readpool import ReadPool

URL = "mysql://archiver:Pw%40x9@db-1:3307,[fd00::2],db-3.example.com:3306/archive?charset=utf8mb4"


def test_the_hosts_are_read_in_order_with_3306_by_default() -> None:
    assert hosts(URL) == (("db-1", 3307), ("fd00::2", 3306), ("db-3.example.com", 3306))
    assert hosts("mysql://u:p@one/db") == (("one", 3306),)
    assert first_host_url(URL) == "mysql://archiver:Pw%40x9@db-1:3307/archive?charset=utf8mb4"


def test_every_host_is_redacted_alike_and_the_password_registered() -> None:
    assert redact_url(URL) == (
        "mysql://archiver:***@db-1:3307,[fd00::2],db-3.example.com:3306/archive?charset=utf8mb4"
    )
    assert url_secrets(URL) == {"Pw%40x9", "Pw@x9"}


@pytest.mark.parametrize("variable", ["JOBARCHIVE_DB_URL", "JOBARCHIVE_READ_DB_URL"])
@pytest.mark.parametrize(
    ("host_list", "why"),
    [
        ("db-1:3306,,db-3", "host 2 of 3 is empty"),
        (",db-2", "host 1 of 2 is empty"),
        ("db-1:3306,", "host 2 of 2 is empty"),
        ("db-1:0,db-2", "host 1 of 2 has a port that is not 1-65535"),
        ("db-1,db-2:65536", "host 2 of 2 has a port that is not 1-65535"),
        ("db-1,db-2:33o6", "host 2 of 2 has a port that is not 1-65535"),
        ("db-1,[fd00::2]x", "host 2 of 2 has a port that is not 1-65535"),
    ],
)
def test_a_bad_host_list_is_refused_in_one_line_naming_the_variable(
    variable: str, host_list: str, why: str
) -> None:
    env = {"JOBARCHIVE_DB_URL": "mysql://u:Secret9@db-0/archive"}
    env[variable] = f"mysql://u:Secret9@{host_list}/archive"
    with pytest.raises(ConfigError) as refused:
        load(env)
    message = str(refused.value)
    assert message.startswith(f"{variable}: {why}")
    assert "\n" not in message and "Secret9" not in message


def test_a_password_where_a_port_goes_is_never_echoed() -> None:
    # No '@': urllib would read "u:Secret9" as a host and its port.
    with pytest.raises(ConfigError) as refused:
        load({"JOBARCHIVE_DB_URL": "mysql://u:Secret9,db-2/archive"})
    assert "Secret9" not in str(refused.value)


def test_both_connections_take_the_failover_pool_over_every_host() -> None:
    config = database.tortoise_config(URL, 6, DbTls(), ReadPool(URL, 3, 7.0))
    written, read = config["connections"]["mysql"], config["connections"]["mysql_read"]
    assert written["engine"] == failover.__name__
    expected = (("db-1", 3307), ("fd00::2", 3306), ("db-3.example.com", 3306))
    assert written["credentials"]["hosts"] == read["credentials"]["hosts"] == expected
    assert written["credentials"]["writer"] is True
    assert "writer" not in read["credentials"]
    assert written["credentials"]["host"] == "db-1"


def test_a_node_out_of_the_primary_component_means_another_host_and_a_wait() -> None:
    not_ready = pymysql.err.OperationalError(1047, "WSREP has not yet prepared node")
    assert failures.is_unavailable(not_ready)
    too_large = pymysql.err.OperationalError(1180, "wsrep_max_ws_rows exceeded")
    assert failures.is_too_large(too_large) and not failures.is_unavailable(too_large)
    conflict = pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock")
    assert failures.is_retryable(conflict)


def test_the_settings_show_every_host_but_not_the_password() -> None:
    settings = load({"JOBARCHIVE_DB_URL": URL, "JOBARCHIVE_READ_DB_URL": URL})
    for shown in (settings.db_url_redacted, settings.read_db_url_redacted):
        assert "Pw" not in shown
        assert "@db-1:3307,[fd00::2],db-3.example.com:3306/" in shown
