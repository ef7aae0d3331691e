"""The one exception type users see.

Every failure the user can fix (missing data, bad checksum, stale index, bad option)
raises :class:`PerspectrumError` with a message that names the file or value at fault.
The CLI prints it as one line and exits non-zero, so nothing else needs to catch it.
"""


class PerspectrumError(Exception):
    """A problem with the user's input or environment, worded for the user."""
