"""Front-proxy (requestheader) authentication as Kubernetes' aggregated servers do it,
as pure functions: the configuration read from the
``kube-system/extension-apiserver-authentication`` ConfigMap, whether a client
certificate is the front proxy's, and the identity its headers name (ARCHITECTURE.md,
decision 29)."""

import dataclasses
import datetime
import json
import urllib.parse
from collections.abc import Mapping, Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID
from multidict import MultiMapping

from jobarchive.reading.auth import Identity

CA_KEY = "requestheader-client-ca-file"
ALLOWED_KEY = "requestheader-allowed-names"
USERNAME_KEY = "requestheader-username-headers"
UID_KEY = "requestheader-uid-headers"
GROUP_KEY = "requestheader-group-headers"
EXTRA_KEY = "requestheader-extra-headers-prefix"
# Kubernetes' own defaults for an aggregated server given its CA by a flag. No uid
# header: an API server too old to name one in the ConfigMap does not strip it either.
DEFAULT_USERNAME = ("X-Remote-User",)
DEFAULT_GROUP = ("X-Remote-Group",)
DEFAULT_EXTRA = ("X-Remote-Extra-",)


class BadConfig(ValueError):
    """A requestheader configuration that cannot be used; the message names the key."""


class Ambiguous(ValueError):
    """A header that names the user (or uid) given more than once (400)."""


@dataclasses.dataclass(frozen=True)
class RequestHeader:
    """Whom to believe (certificates of ``cas`` whose CN is one of ``allowed_names``,
    any CN when empty) and which headers name the user, uid, groups and extra."""

    ca_pem: bytes
    cas: tuple[x509.Certificate, ...]
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = DEFAULT_USERNAME
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = DEFAULT_GROUP
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA


def certificates(ca_pem: bytes, where: str) -> tuple[x509.Certificate, ...]:
    """The certificates of a PEM bundle; BadConfig naming ``where`` when it holds none."""
    try:
        found = tuple(x509.load_pem_x509_certificates(ca_pem))
    except ValueError:
        raise BadConfig(f"{where}: not a PEM bundle of certificates") from None
    return found


def names(data: Mapping[str, object], key: str) -> tuple[str, ...]:
    """A ConfigMap value that is a JSON list of strings ("" or absent: empty)."""
    raw = data.get(key) or "[]"
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadConfig(f"{key}: not a JSON list of strings")
    return tuple(value)


def from_configmap(
    data: Mapping[str, object], allowed_names: tuple[str, ...] | None = None
) -> RequestHeader | None:
    """The configuration a ConfigMap's data gives (``allowed_names``, when given,
    replaces its own); None when it names no requestheader CA; BadConfig otherwise."""
    ca = data.get(CA_KEY)
    if not ca:
        return None
    if not isinstance(ca, str):
        raise BadConfig(f"{CA_KEY}: not a PEM bundle of certificates")
    usernames = names(data, USERNAME_KEY)
    if not usernames:
        raise BadConfig(f"{USERNAME_KEY}: names no header")
    pem = ca.encode()
    return RequestHeader(
        ca_pem=pem,
        cas=certificates(pem, CA_KEY),
        allowed_names=names(data, ALLOWED_KEY) if allowed_names is None else allowed_names,
        username_headers=usernames,
        uid_headers=names(data, UID_KEY),
        group_headers=names(data, GROUP_KEY),
        extra_prefixes=names(data, EXTRA_KEY),
    )


def proxy_name(der: bytes, config: RequestHeader, now: datetime.datetime) -> str | None:
    """The CN of a client certificate (DER) when it is the front proxy's: issued by a CA
    of the configuration, valid at ``now``, its CN allowed; None otherwise.

    The handshake verified the certificate against the CA of its time; this checks it
    against the current one, which may have been rotated since the connection opened.
    """
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        return None
    if not any(_issued(certificate, ca) for ca in config.cas):
        return None
    common = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    name = common[0].value if common else ""
    if not isinstance(name, str) or (config.allowed_names and name not in config.allowed_names):
        return None
    return name


def _issued(certificate: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def identity(headers: "MultiMapping[str]", config: RequestHeader) -> Identity | None:
    """Whom the front proxy's headers name; None when no username header has a value
    (the bearer token then decides); Ambiguous when one is given twice."""
    username = _first(headers, config.username_headers)
    if not username:
        return None
    groups = [value for header in config.group_headers for value in headers.getall(header, [])]
    extra: dict[str, list[str]] = {}
    for header, value in headers.items():
        lowered = header.lower()
        prefix = next((p for p in config.extra_prefixes if lowered.startswith(p.lower())), None)
        if prefix is not None:
            # Lower-cased, then percent-decoded, as Kubernetes reads an extra's key.
            key = urllib.parse.unquote(lowered[len(prefix) :])
            extra.setdefault(key, []).append(value)
    return Identity(
        username=username,
        uid=_first(headers, config.uid_headers),
        groups=tuple(group for group in groups if group),
        extra=tuple(sorted((key, tuple(values)) for key, values in extra.items())),
    )


def _first(headers: "MultiMapping[str]", names: Sequence[str]) -> str:
    """The value of the first of ``names`` that has one, as Kubernetes takes it."""
    for name in names:
        values = headers.getall(name, [])
        if len(values) > 1:
            raise Ambiguous(f"{len(values)} {name} headers; send one")
        if values and values[0]:
            return values[0]
    return ""
