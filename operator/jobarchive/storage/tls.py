"""TLS to MySQL/MariaDB: the SSL context aiomysql is handed, and the proof that a
session is encrypted.

The modes are MySQL's ``--ssl-mode`` values: ``required`` encrypts without checking
the certificate (it keeps out listeners, not an impostor), ``verify-ca`` checks that
the certificate chains to the configured CA, ``verify-identity`` also that it names
the host of the URL.

aiomysql, like PyMySQL, carries on in clear text when a server does not offer TLS,
whatever context it was given. So a database opened with TLS is asked, before it is
used, whether the session is encrypted (``Ssl_cipher``), and refused when it is not.
"""

import ssl

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.config import DbTls


class NotEncrypted(ConnectionError):
    """TLS was asked for and the session is in clear text; the message says why."""


def ssl_context(tls: DbTls) -> ssl.SSLContext | None:
    """The SSL context for a mode, or None when TLS is off."""
    if not tls.on:
        return None
    if tls.mode == "required":
        unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        return unverified
    # Only the configured CA is trusted, not the system's: that is what verify-ca means.
    verified = ssl.create_default_context(cafile=tls.ca)
    verified.check_hostname = tls.mode == "verify-identity"
    return verified


async def require_encrypted(conn: BaseDBAsyncClient, tls: DbTls) -> str:
    """The session's cipher; raises NotEncrypted when the server encrypts nothing."""
    rows = await conn.execute_query_dict("SHOW STATUS LIKE 'Ssl_cipher'")
    cipher = str(rows[0]["Value"]) if rows else ""
    if not cipher:
        raise NotEncrypted(
            f"the server does not offer TLS, which JOBARCHIVE_DB_TLS={tls.mode} requires"
        )
    return cipher
