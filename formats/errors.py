"""The one exception type for bad user input (data, labels, model files)."""


class DataError(ValueError):
    """A user-facing input error: the message is one line that names the file (and the line).

    The command-line layer prints it as ``prog: error: <message>`` and exits with status 1.
    A ``ValueError``: the Python API raises it for unusable arrays and labels too.
    """

    def __init__(self, where: str, message: str, line: int | None = None):
        self.where = where
        self.line = line
        self.message = message
        loc = f"{where}:{line}" if line is not None else where
        super().__init__(f"{loc}: {message}")

    def __reduce__(self):  # survives the trip back from a worker process
        return (DataError, (self.where, self.message, self.line))
