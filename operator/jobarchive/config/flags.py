"""The boolean settings' one syntax: ``true`` or ``false``, in any case, as Kubernetes
manifests write them. A setting that took another spelling before (``0``/``1``) still
reads it, with a warning naming the new one, so that no deployment breaks on upgrade.
"""

import dataclasses
import logging
from collections.abc import Mapping

from jobarchive.config.errors import ConfigError

logger = logging.getLogger(__name__)

TRUE, FALSE = "true", "false"


@dataclasses.dataclass(frozen=True)
class Flag:
    """A boolean setting: its variable, default and, if it had one, its old spelling."""

    variable: str
    default: bool = False
    # What the setting took before true/false, as (false, true): ("0", "1").
    legacy: tuple[str, str] | None = None

    def read(self, env: Mapping[str, str]) -> bool:
        """The value in the environment; the default when unset or empty; ConfigError
        naming the variable for anything but true or false (or the old spelling)."""
        raw = env.get(self.variable)
        if not raw:
            return self.default
        if raw.lower() in (TRUE, FALSE):
            return raw.lower() == TRUE
        if self.legacy is None or raw not in self.legacy:
            raise ConfigError(f"{self.variable}: {raw!r} is not true or false")
        value = raw == self.legacy[1]
        new = TRUE if value else FALSE
        logger.warning(
            "%s=%s is the old spelling, read as %s; write %s=%s (every boolean setting "
            "takes true or false)",
            self.variable,
            raw,
            new,
            self.variable,
            new,
        )
        return value
