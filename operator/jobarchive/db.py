"""Opening and closing the database through Tortoise, and creating the schema.

Two facts of Tortoise 1.x shape this module (PITFALLS.md): its state lives in a
context variable, so the context opened in Kopf's startup handler must be the
global fallback to be seen by the handler tasks; and only the first pooled MySQL
connection would get the session time zone, so every connection sets it through
``init_command``. The MySQL driver is logged because Tortoise picks asyncmy over
aiomysql silently whenever asyncmy is importable.
"""

import importlib.util
import logging
import warnings
from typing import Any

from tortoise import Tortoise, connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive.config import redact_url

logger = logging.getLogger(__name__)

MODELS_MODULE = "jobarchive.models"
CONNECTION = "default"


def tortoise_config(db_url: str) -> dict[str, Any]:
    """The Tortoise configuration for a database URL (UTC everywhere, utf8mb4 on MySQL)."""
    connection = expand_db_url(db_url)
    if connection["engine"] == "tortoise.backends.mysql":
        credentials = connection["credentials"]
        credentials.setdefault("charset", "utf8mb4")
        credentials["init_command"] = "SET time_zone='+00:00'"
    return {
        "connections": {CONNECTION: connection},
        "apps": {"jobarchive": {"models": [MODELS_MODULE], "default_connection": CONNECTION}},
        "use_tz": True,
        "timezone": "UTC",
    }


def mysql_driver() -> str:
    """The MySQL driver Tortoise uses in this environment."""
    return "asyncmy" if importlib.util.find_spec("asyncmy") else "aiomysql"


async def open_database(db_url: str) -> None:
    """Connect, and create the tables and indexes that do not exist yet."""
    await Tortoise.init(config=tortoise_config(db_url), _enable_global_fallback=True)
    conn = connection()
    dialect = conn.capabilities.dialect
    driver = mysql_driver() if dialect == "mysql" else "aiosqlite"
    logger.info("Database %s (%s via %s)", redact_url(db_url), dialect, driver)
    with warnings.catch_warnings():
        # MySQL answers CREATE TABLE IF NOT EXISTS on an existing table with a warning
        # that aiomysql raises as a Python warning at every start; it is the normal case.
        warnings.filterwarnings("ignore", message=r"Table '.*' already exists")
        await Tortoise.generate_schemas(safe=True)


async def close_database() -> None:
    """Close every connection; an open aiosqlite connection would keep the process alive."""
    await Tortoise.close_connections()


def connection() -> BaseDBAsyncClient:
    """The connection (pool) the store writes through."""
    client: BaseDBAsyncClient = connections.get(CONNECTION)
    return client
