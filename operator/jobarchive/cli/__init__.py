"""``jobarchive``: read the history from a terminal, serve it, prune it, migrate it.

Every command works on the database the operator writes (``JOBARCHIVE_DB_URL``, the
same variables and default as the operator, or ``--db-url-file`` or ``--db-url``), or,
for the read commands, through the cluster's aggregated API with a kubeconfig
(``--kubeconfig``, or ``KUBECONFIG`` when no database is named: decision 30), and
prints a table or, with ``--output json``, the rows under the seed's JSON field names.
``--db-url`` stays for scripts that use it, but a command line is public (``ps``
shows it to every user of the machine), so a password in it is warned about.

Failures are one line, never a traceback: bad input (an unparseable date, an
unknown status, a cursor from elsewhere, a database URL the operator would refuse)
exits with status 2 and says what to change; a database that cannot be read exits
with status 1 and names the cause in the driver's words, never with the password.

The commands that read (``reads``, ``serve``) open the read side only, as the API
does (``JOBARCHIVE_READ_DB_URL`` when set): its statements are stopped by the
database after ``JOBARCHIVE_API_TIMEOUT`` seconds, which is one line too. ``prune``
and ``migrate`` (``admin``) write, through the operator's own URL.
"""

from jobarchive.cli.group import PASSWORD_WARNING, main

__all__ = ["PASSWORD_WARNING", "main"]
