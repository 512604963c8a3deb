"""File formats: SVMlight/LIBSVM data, model files and prediction files."""

from ssl_svm.formats.errors import DataError

# Input is read in pieces of this size (streaming prediction, the parser's blocks); here, in a
# module without numpy, so that ssl-predict's options can show it without loading the parser.
CHUNK_BYTES = 8 << 20
# Labels are integers in [-LABEL_MAX, LABEL_MAX] (a C int, as LIBSVM's and LIBLINEAR's
# programs print them): exact in a double, the same after a model file's round trip. Here,
# without numpy, for the commands' option ranges.
LABEL_MAX = 2147483647

__all__ = ["CHUNK_BYTES", "LABEL_MAX", "DataError"]
