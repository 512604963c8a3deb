"""Errors a solver raises for a problem it cannot solve as posed (not for programming errors)."""


class ProblemError(ValueError):
    """The data do not fit the method (e.g. one class only). The message is one line."""


class NonFiniteError(ProblemError):
    """Decision values or a fit that are not finite numbers (overflow). ``row``: the first
    row (0-based, of the rows given) whose decision value is not finite, where known."""

    def __init__(self, message: str, row: int | None = None):
        super().__init__(message)
        self.row = row

    def __reduce__(self):  # survives the trip back from a worker process
        return (NonFiniteError, (str(self), self.row))


class MemoryLimitError(ProblemError, MemoryError):
    """A fit would hold more than the memory limit (``--max-memory``) at once. Both a
    :class:`ProblemError` (a ValueError) and a ``MemoryError``, so either handler takes it."""
