"""The one way a setting is refused."""


class ConfigError(Exception):
    """A setting in the environment is invalid; the message names it."""
