"""File formats: SVMlight/LIBSVM data, model files and prediction files."""

from formats.errors import DataError

__all__ = ["DataError"]
