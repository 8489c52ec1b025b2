"""The read side: queries over the archive, served as the CLI and the HTTP API.

It only reads, and imports nothing of the write path (``recording``)."""
