"""File formats: SVMlight/LIBSVM data, model files and prediction files."""

import solvers  # noqa: F401 -- sets the thread pools up before the parser imports numba
from formats.errors import DataError

# Input is read in pieces of this size (streaming prediction, the parser's blocks); here, in a
# module without numpy, so that ssl-predict's options can show it without loading the parser.
CHUNK_BYTES = 8 << 20

__all__ = ["CHUNK_BYTES", "DataError"]
