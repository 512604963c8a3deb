"""The command-line programs ssl-train, ssl-predict and ssl-tune (thin: options, files, messages).
"""

import solvers  # noqa: F401 -- sets the thread pools up before numpy and numba are imported
