"""User-facing errors.

Anything a user can cause (a bad config value, a missing raw file, a corrupt input) raises
:class:`UserError` with a message that names the problem and how to fix it.  The CLI prints
such messages without a traceback; every other exception is a bug and keeps its traceback.
"""


class UserError(Exception):
    """An error caused by input the user controls (config, files, arguments)."""


class ConfigError(UserError):
    """A configuration value is missing, of the wrong type or out of range."""


class DataError(UserError):
    """A raw or derived data file is missing, corrupt or inconsistent."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / SIGINT during work that can be resumed; the message says how (CLI exit 130)."""
