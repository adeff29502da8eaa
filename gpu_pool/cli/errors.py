"""The command's own error."""


class CliError(Exception):
    """A problem the user can fix; printed without a traceback."""
