"""Serving TLS: the server's certificate, from files or made at start, and the TLS
context a server listens with, whose client CA can be replaced while it serves
(ARCHITECTURE.md, decision 29)."""

import contextlib
import dataclasses
import datetime
import ipaddress
import logging
import pathlib
import socket
import ssl
import tempfile
from collections.abc import Iterator

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from jobarchive.config import ApiTls

logger = logging.getLogger(__name__)

# A certificate made at start outlives any process: a pod is replaced long before.
SELF_SIGNED_DAYS = 365
SELF_SIGNED_NAME = "jobarchive"


class CertificateError(Exception):
    """A serving certificate or key that cannot be loaded; the message says which."""


@dataclasses.dataclass(frozen=True)
class ServingCertificate:
    """The server's certificate chain and key: files named by the operator (read again
    each time a context is made, so a renewed pair is taken up), or PEM made at start."""

    cert_file: str = ""
    key_file: str = ""
    pem: tuple[bytes, bytes] | None = dataclasses.field(default=None, repr=False)

    @property
    def origin(self) -> str:
        """Where the certificate comes from, for log lines."""
        return self.cert_file or "a self-signed certificate made at start"

    def stamp(self) -> tuple[float, ...]:
        """When the files last changed (nothing for a made certificate)."""
        paths = (self.cert_file, self.key_file) if self.pem is None else ()
        try:
            return tuple(pathlib.Path(path).stat().st_mtime for path in paths)
        except OSError:
            return ()

    @contextlib.contextmanager
    def files(self) -> Iterator[tuple[str, str]]:
        """Paths of the chain and the key, for ``load_cert_chain``, which reads files
        only: a made certificate is written to a private directory removed at once."""
        if self.pem is None:
            yield self.cert_file, self.key_file
            return
        with tempfile.TemporaryDirectory(prefix="jobarchive-tls-") as folder:
            cert, key = pathlib.Path(folder, "tls.crt"), pathlib.Path(folder, "tls.key")
            cert.write_bytes(self.pem[0])
            key.touch(mode=0o600)
            key.write_bytes(self.pem[1])
            yield str(cert), str(key)


def self_signed(now: datetime.datetime | None = None) -> ServingCertificate:
    """A certificate for this host (its name, localhost, 127.0.0.1, ::1) signed by its
    own key (EC P-256), valid for ``SELF_SIGNED_DAYS``."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SELF_SIGNED_NAME)])
    hosts = sorted({socket.gethostname(), "localhost"})
    names: list[x509.GeneralName] = [x509.DNSName(host) for host in hosts]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "::1")]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=SELF_SIGNED_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ServingCertificate(pem=(certificate.public_bytes(serialization.Encoding.PEM), key_pem))


def server_context(
    certificate: ServingCertificate, client_ca: bytes | None, ask_clients: bool
) -> ssl.SSLContext:
    """A server context, TLS 1.2 or later, serving ``certificate``; with ``ask_clients``
    it asks every client for a certificate and refuses one that ``client_ca`` (PEM, maybe
    several; None: none at all) did not sign. CertificateError when it cannot load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        with certificate.files() as (cert, key):
            context.load_cert_chain(cert, key)
        if client_ca:
            context.load_verify_locations(cadata=client_ca.decode("ascii"))
    except (OSError, ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        raise CertificateError(f"{certificate.origin}: {exc}") from None
    if ask_clients:
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class ServerTls:
    """The TLS a server listens with (``context``), whose every handshake takes the
    current context, so that a new client CA or a renewed certificate applies to the
    next connection without a restart.

    Python's ssl keeps a listening socket's context; its ``sni_callback`` runs at
    every ClientHello, with or without a server name, and may set the connection's
    context: the current one's certificate and CA store are then used. The verify mode
    stays the listening context's, so both ask for client certificates alike.
    """

    def __init__(self, certificate: ServingCertificate, ask_clients: bool) -> None:
        self.certificate = certificate
        self.ask_clients = ask_clients
        self.client_ca: bytes | None = None
        self._stamp = certificate.stamp()
        self.current = server_context(certificate, None, ask_clients)
        self.context = server_context(certificate, None, ask_clients)
        self.context.sni_callback = self._handshake

    def trust(self, client_ca: bytes | None) -> None:
        """Verify client certificates against ``client_ca`` from the next handshake on,
        and serve the certificate files as they are now, when either changed; a context
        that cannot be made is logged and the current one kept."""
        stamp = self.certificate.stamp()
        if (client_ca, stamp) == (self.client_ca, self._stamp):
            return
        try:
            self.current = server_context(self.certificate, client_ca, self.ask_clients)
        except CertificateError as exc:
            logger.warning("Cannot renew the serving TLS context, keeping the last: %s", exc)
            return
        self.client_ca, self._stamp = client_ca, stamp

    def _handshake(
        self, connection: ssl.SSLObject | ssl.SSLSocket, _: str | None, __: ssl.SSLContext
    ) -> None:
        connection.context = self.current


def serving(settings: ApiTls, ask_clients: bool) -> ServerTls | None:
    """The TLS the API serves with (None: plain HTTP), asking clients for certificates
    with ``ask_clients``; CertificateError when the files cannot be loaded."""
    if settings.cert_file and settings.key_file:
        certificate = ServingCertificate(settings.cert_file, settings.key_file)
    elif settings.self_signed:
        certificate = self_signed()
    else:
        return None
    return ServerTls(certificate, ask_clients)
