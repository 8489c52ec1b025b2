"""TLS to MySQL/MariaDB: JOBARCHIVE_DB_TLS and JOBARCHIVE_DB_TLS_CA, checked against
each other and against the database URL."""

import dataclasses
import pathlib
from collections.abc import Mapping

from jobarchive.config.errors import ConfigError

# MySQL's own --ssl-mode names; ``required`` encrypts without checking who answers.
TLS_MODES = ("off", "required", "verify-ca", "verify-identity")
_VERIFYING = ("verify-ca", "verify-identity")


@dataclasses.dataclass(frozen=True)
class DbTls:
    """TLS to MySQL/MariaDB, as JOBARCHIVE_DB_TLS and JOBARCHIVE_DB_TLS_CA ask for it."""

    mode: str = "off"
    # The PEM bundle the server's certificate must chain to; the verify-* modes only.
    ca: str | None = None

    @property
    def on(self) -> bool:
        """Whether the connection must be encrypted."""
        return self.mode != "off"


def db_tls(env: Mapping[str, str], db_url: str) -> DbTls:
    """JOBARCHIVE_DB_TLS and JOBARCHIVE_DB_TLS_CA, checked against each other and the URL."""
    mode = (env.get("JOBARCHIVE_DB_TLS") or "off").strip().lower().replace("_", "-")
    ca = env.get("JOBARCHIVE_DB_TLS_CA") or None
    if mode not in TLS_MODES:
        raise ConfigError(f"JOBARCHIVE_DB_TLS: {mode!r} is not one of {', '.join(TLS_MODES)}")
    if db_url.startswith("sqlite:") and (mode != "off" or ca):
        variable = "JOBARCHIVE_DB_TLS" if mode != "off" else "JOBARCHIVE_DB_TLS_CA"
        raise ConfigError(f"{variable}: the database is a SQLite file, which TLS does not apply to")
    if ca and mode not in _VERIFYING:
        raise ConfigError(
            f"JOBARCHIVE_DB_TLS_CA: used only by JOBARCHIVE_DB_TLS=verify-ca or verify-identity, "
            f"not {mode}"
        )
    if mode in _VERIFYING and not ca:
        raise ConfigError(
            f"JOBARCHIVE_DB_TLS_CA: JOBARCHIVE_DB_TLS={mode} needs the CA bundle (PEM) "
            "that signed the server's certificate"
        )
    if ca:
        try:
            pem = pathlib.Path(ca).read_text(encoding="ascii", errors="replace")
        except OSError as exc:
            raise ConfigError(
                f"JOBARCHIVE_DB_TLS_CA: cannot read {ca} ({exc.strerror or exc})"
            ) from None
        if "-----BEGIN CERTIFICATE-----" not in pem:
            raise ConfigError(f"JOBARCHIVE_DB_TLS_CA: {ca} holds no PEM certificate")
    return DbTls(mode, ca)
