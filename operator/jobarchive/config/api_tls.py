"""The API's TLS and its front proxy's overrides: a certificate and key given as a
pair of files, or one made at start; a requestheader client CA file and allowed names
in place of the cluster's ConfigMap (ARCHITECTURE.md, decision 29)."""

import dataclasses
import os
from collections.abc import Mapping

from jobarchive.config.errors import ConfigError
from jobarchive.config.flags import Flag

CERT_FILE = "JOBARCHIVE_API_TLS_CERT_FILE"
KEY_FILE = "JOBARCHIVE_API_TLS_KEY_FILE"
SELF_SIGNED = "JOBARCHIVE_API_TLS_SELF_SIGNED"
CLIENT_CA_FILE = "JOBARCHIVE_REQUESTHEADER_CLIENT_CA_FILE"
ALLOWED_NAMES = "JOBARCHIVE_REQUESTHEADER_ALLOWED_NAMES"


@dataclasses.dataclass(frozen=True)
class ApiTls:
    """How the API serves: plain HTTP (no file, not self-signed), the pair of files, or
    a certificate made at start; and what replaces the ConfigMap's requestheader CA
    and allowed names (None: nothing does)."""

    cert_file: str | None = None
    key_file: str | None = None
    self_signed: bool = False
    client_ca_file: str | None = None
    allowed_names: tuple[str, ...] | None = None

    @property
    def enabled(self) -> bool:
        """Whether the API serves TLS."""
        return self.self_signed or self.cert_file is not None


def api_tls(env: Mapping[str, str]) -> ApiTls:
    """The API's TLS settings; ConfigError naming the variable that is wrong."""
    cert, key = env.get(CERT_FILE) or None, env.get(KEY_FILE) or None
    if (cert is None) != (key is None):
        given, missing = (CERT_FILE, KEY_FILE) if cert else (KEY_FILE, CERT_FILE)
        raise ConfigError(f"{missing}: not set, but {given} is; set both or neither")
    self_signed = Flag(SELF_SIGNED).read(env)
    if self_signed and cert:
        raise ConfigError(f"{SELF_SIGNED}: true, but {CERT_FILE} names a certificate; set one")
    client_ca = env.get(CLIENT_CA_FILE) or None
    for variable, path in ((CERT_FILE, cert), (KEY_FILE, key), (CLIENT_CA_FILE, client_ca)):
        if path is not None and not os.path.isfile(path):
            raise ConfigError(f"{variable}: {path!r} is not a file")
    return ApiTls(
        cert_file=cert,
        key_file=key,
        self_signed=self_signed,
        client_ca_file=client_ca,
        allowed_names=allowed_names(env.get(ALLOWED_NAMES), ALLOWED_NAMES),
    )


def allowed_names(raw: str | None, where: str) -> tuple[str, ...] | None:
    """Comma-separated common names, as Kubernetes' flag takes them; None when unset."""
    if not raw or not raw.strip():
        return None
    names = tuple(name.strip() for name in raw.split(","))
    if not all(names):
        raise ConfigError(f"{where}: {raw!r} has an empty name")
    return names
