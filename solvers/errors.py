"""Errors a solver raises for a problem it cannot solve as posed (not for programming errors)."""


class ProblemError(ValueError):
    """The data do not fit the method (e.g. one class only). The message is one line."""
