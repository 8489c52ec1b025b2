"""The read side's own pool: where it reads (JOBARCHIVE_READ_DB_URL, checked like the
main URL), its connection beside the writer's, and the time limit each SELECT carries."""

import pathlib

import pytest

from jobarchive.config import ConfigError, DbTls, load
from jobarchive.storage import database, dialects
from jobarchive.storage.readpool import ReadPool

WRITTEN = "mysql://writer:Qz8Vx-Kj_Wm@db.example.com:3306/archive"
REPLICA = "mysql://reader:Pw7Rt-Ys_Lq@replica.example.com:3306/archive"


def test_reads_default_to_the_database_written_and_may_go_elsewhere() -> None:
    assert load({"JOBARCHIVE_DB_URL": WRITTEN}).read_db_url == WRITTEN
    assert load({}).read_db_url == load({}).db_url
    settings = load({"JOBARCHIVE_DB_URL": WRITTEN, "JOBARCHIVE_READ_DB_URL": REPLICA})
    assert (settings.db_url, settings.read_db_url) == (WRITTEN, REPLICA)
    assert settings.read_db_url_redacted == "mysql://reader:***@replica.example.com:3306/archive"


def test_the_read_url_may_come_from_a_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "read-url"
    path.write_text(REPLICA + "\n")
    env = {"JOBARCHIVE_DB_URL": WRITTEN, "JOBARCHIVE_READ_DB_URL_FILE": str(path)}
    assert load(env).read_db_url == REPLICA
    with pytest.raises(ConfigError, match="both set"):
        load({**env, "JOBARCHIVE_READ_DB_URL": REPLICA})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgres://reader:Pw7Rt-Ys_Lq@replica/archive", "scheme 'postgres' is not supported"),
        ("mysql://reader:Pw7Rt#Ys_Lq@replica/archive", "holds an unencoded"),
        ("mysql://reader:Pw7Rt-Ys_Lq@replica.example.com:3306/", "no database name"),
        ("sqlite:///tmp/archive.sqlite3", "a sqlite database, while the archive is written to"),
    ],
)
def test_a_bad_read_url_is_refused_naming_its_variable_never_its_password(
    url: str, message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load({"JOBARCHIVE_DB_URL": WRITTEN, "JOBARCHIVE_READ_DB_URL": url})

    text = str(error.value)
    assert text.startswith("JOBARCHIVE_READ_DB_URL") and message in text
    assert "Pw7" not in text and "Ys_" not in text


def test_the_read_pool_has_four_connections_by_default_and_at_most_64() -> None:
    assert load({}).api_concurrency == 4
    assert load({"JOBARCHIVE_API_CONCURRENCY": "64"}).api_concurrency == 64
    for bad in ("0", "65", "four"):
        with pytest.raises(ConfigError, match="JOBARCHIVE_API_CONCURRENCY"):
            load({"JOBARCHIVE_API_CONCURRENCY": bad})


def test_the_read_connection_is_a_pool_of_its_own_beside_the_writers() -> None:
    config = database.tortoise_config(WRITTEN, 6, DbTls(), ReadPool(REPLICA, 3, 7.0))
    written, read = config["connections"]["mysql"], config["connections"]["mysql_read"]
    assert config["apps"]["jobarchive"]["default_connection"] == "mysql"
    assert (written["credentials"]["host"], written["credentials"]["maxsize"]) == (
        "db.example.com",
        6,
    )
    assert read["engine"] == "jobarchive.storage.readpool"
    assert (read["credentials"]["host"], read["credentials"]["maxsize"]) == (
        "replica.example.com",
        3,
    )
    assert read["credentials"]["statement_timeout"] == 7.0

    alone = database.reader_config(ReadPool("sqlite://archive.sqlite3"), DbTls())
    assert list(alone["connections"]) == ["sqlite_read"]
    assert alone["apps"]["jobarchive"]["default_connection"] == "sqlite_read"


def test_a_select_carries_mariadbs_and_mysqls_limits_each_hidden_from_the_other() -> None:
    bounded = dialects.MYSQL.bounded("SELECT `id` FROM `job_info` LIMIT 51", 2.5)
    assert bounded == (
        "/*M!100102 SET STATEMENT max_statement_time=2.500 FOR*/ "
        "SELECT /*+ MAX_EXECUTION_TIME(2500) */ `id` FROM `job_info` LIMIT 51"
    )
    # Never a limit of zero, which both servers read as none.
    assert "max_statement_time=0.001" in dialects.MYSQL.bounded("SELECT 1", 1e-6)
    assert "MAX_EXECUTION_TIME(1)" in dialects.MYSQL.bounded("SELECT 1", 1e-6)
    assert dialects.MYSQL.bounded("SHOW STATUS LIKE 'Ssl_cipher'", 2.5).startswith("SHOW")
    assert dialects.SQLITE.bounded("SELECT 1", 2.5) == "SELECT 1"
