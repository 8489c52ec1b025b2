"""Certificate authorities and certificates made in the test with ``cryptography``: a
serving certificate for 127.0.0.1, and client certificates as a front proxy holds."""

import dataclasses
import datetime
import ipaddress
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Key = ec.EllipticCurvePrivateKey


def _key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclasses.dataclass(frozen=True)
class Issued:
    """A certificate and its key, written as PEM files."""

    cert: pathlib.Path
    key: pathlib.Path


class Authority:
    """A self-signed CA that issues certificates into ``folder``."""

    def __init__(self, folder: pathlib.Path, name: str) -> None:
        self.folder = folder
        self.name = name
        folder.mkdir(parents=True, exist_ok=True)
        self.key = _key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        usage = x509.KeyUsage(
            digital_signature=True,
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            key_cert_sign=True,
            crl_sign=True,
            encipher_only=False,
            decipher_only=False,
        )
        builder = self._builder(subject, self.key, days=2).add_extension(usage, critical=True)
        self.certificate = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        ).sign(self.key, hashes.SHA256())

    @property
    def pem(self) -> str:
        """The CA's certificate, as a ConfigMap holds it."""
        return self.certificate.public_bytes(serialization.Encoding.PEM).decode()

    def write(self) -> pathlib.Path:
        """The CA's certificate as a file."""
        path = self.folder / f"{self.name}.pem"
        path.write_text(self.pem)
        return path

    def _builder(self, subject: x509.Name, key: Key, days: float) -> x509.CertificateBuilder:
        issuer = subject if key is self.key else self.certificate.subject
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
        )

    def issue(self, name: str, server: bool = False, days: float = 1) -> Issued:
        """A certificate for CN ``name``: a client's, or (``server``) one for 127.0.0.1."""
        key = _key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        use = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            self._builder(subject, key, days)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([use]), critical=False)
        )
        if server:
            address = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = builder.add_extension(x509.SubjectAlternativeName([address]), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        issued = Issued(self.folder / f"{name}.crt", self.folder / f"{name}.key")
        issued.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(_key_pem(key))
        return issued
