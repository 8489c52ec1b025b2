"""Settings from the environment, validated once at start.

Every setting is read in this package and nowhere else, so the configuration table
(docs/configuration.md) and the package can be checked against each other; importing
it reads nothing.
A bad value raises ConfigError naming the variable; the database password is never
part of a message: use ``Settings.db_url_redacted`` wherever the URL is shown.

``settings`` puts the operator's ``Settings`` together (``load``) from ``numbers``
(each tuned setting's default and range, once), ``database_url`` (where the URLs
come from, checked and redacted) and ``database_tls``. Every boolean setting is read
by ``flags.Flag``: true or false.
"""

from jobarchive.config.api_tls import ApiTls, allowed_names
from jobarchive.config.database_tls import TLS_MODES, DbTls
from jobarchive.config.database_url import (
    DEFAULT_DB_URL,
    first_host_url,
    has_password,
    hosts,
    read_url_file,
    reads_through_api,
    redact_url,
    url_secrets,
    validate_db_url,
)
from jobarchive.config.errors import ConfigError
from jobarchive.config.flags import Flag
from jobarchive.config.numbers import BOUNDED, DEFAULTS, FLAGS, Bounded, Numbers
from jobarchive.config.settings import (
    API_AUTH_MODES,
    DEFAULT_API_HOST,
    Settings,
    check_prometheus_url,
    load,
    matches,
)

__all__ = [
    "API_AUTH_MODES",
    "BOUNDED",
    "DEFAULTS",
    "DEFAULT_API_HOST",
    "DEFAULT_DB_URL",
    "FLAGS",
    "TLS_MODES",
    "ApiTls",
    "Bounded",
    "ConfigError",
    "DbTls",
    "Flag",
    "Numbers",
    "Settings",
    "allowed_names",
    "check_prometheus_url",
    "first_host_url",
    "has_password",
    "hosts",
    "load",
    "matches",
    "read_url_file",
    "reads_through_api",
    "redact_url",
    "url_secrets",
    "validate_db_url",
]
