"""The test bed shared by the tests, ``make bench`` and ``make demo``: a private MariaDB
server, the emulated Kubernetes API, the operator as a child process, and realistic
objects. Test-only helpers live in ``tests/support``; nothing here imports ``tests``."""
