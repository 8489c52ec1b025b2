"""Throwaway certificate authorities and server certificates, made with the openssl
command, and a private MariaDB server that serves TLS with them (the API's TLS tests
make theirs with ``cryptography``: ``tests.support.pki``)."""

import dataclasses
import pathlib
import shutil
import subprocess
import urllib.parse

from testbed.mariadb import MariaDBServer, connect


@dataclasses.dataclass(frozen=True)
class ServerCertificate:
    """A CA's certificate, and a key and certificate it signed for a server."""

    ca: pathlib.Path
    cert: pathlib.Path
    key: pathlib.Path


def _openssl(*args: str, cwd: pathlib.Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the openssl command is needed to make test certificates")
    subprocess.run([openssl, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(folder: pathlib.Path, name: str) -> pathlib.Path:
    """A self-signed CA (``name.pem``, its key beside it); returns the certificate's path."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-sha256",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=folder,
    )  # fmt: skip
    return folder / f"{name}.pem"


def make_server_certificate(folder: pathlib.Path, ca: pathlib.Path, host: str) -> ServerCertificate:
    """A key and a certificate for the IP address ``host``, signed by ``ca``."""
    extensions = folder / "server.ext"
    extensions.write_text(
        f"basicConstraints=CA:FALSE\nsubjectAltName=IP:{host}\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
    )
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", f"/CN={host}",
        cwd=folder,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", str(ca), "-CAkey", str(ca.with_suffix(".key")),
        "-CAcreateserial", "-days", "2", "-sha256", "-extfile", str(extensions),
        "-out", "server.pem",
        cwd=folder,
    )  # fmt: skip
    return ServerCertificate(ca, folder / "server.pem", folder / "server.key")


@dataclasses.dataclass(frozen=True)
class TlsServer:
    """A private MariaDB server that offers TLS, and an account that may only use it."""

    server: MariaDBServer
    # The CA that signed the server's certificate, and one that did not.
    ca: pathlib.Path
    other_ca: pathlib.Path
    # Percent-encoded in ``url``: it holds characters a URL reserves.
    password: str

    def url(self, host: str = "127.0.0.1") -> str:
        """The archive's URL for the TLS-only account."""
        password = urllib.parse.quote(self.password, safe="")
        return f"mysql://{TLS_USER}:{password}@{host}:{self.server.port}/{TLS_DATABASE}"


TLS_USER = "archivist"
TLS_DATABASE = "tls_archive"


def start_tls_server(folder: pathlib.Path, password: str) -> TlsServer:
    """Start a MariaDB server with a certificate for 127.0.0.1, a database, and an
    account created ``REQUIRE SSL``, so that the server itself refuses it in clear text."""
    ca = make_ca(folder / "ca", "jobarchive-test-ca")
    other_ca = make_ca(folder / "other", "another-test-ca")
    certificate = make_server_certificate(folder / "ca", ca, "127.0.0.1")
    options = [f"--ssl-ca={ca}", f"--ssl-cert={certificate.cert}", f"--ssl-key={certificate.key}"]
    server = MariaDBServer(options=[*options, "--innodb-buffer-pool-size=64M"])
    server.start()
    with connect(server.url) as conn, conn.cursor() as cursor:
        # Anonymous accounts would match a connection from localhost before ours does.
        cursor.execute("SELECT Host FROM mysql.user WHERE User = ''")
        for (host,) in cursor.fetchall():
            cursor.execute("DROP USER ''@%s", (host,))
        cursor.execute(f"CREATE DATABASE {TLS_DATABASE} CHARACTER SET utf8mb4")
        cursor.execute(f"CREATE USER '{TLS_USER}'@'%%' IDENTIFIED BY %s REQUIRE SSL", (password,))
        cursor.execute(f"GRANT ALL ON {TLS_DATABASE}.* TO '{TLS_USER}'@'%'")
    return TlsServer(server, ca, other_ca, password)
