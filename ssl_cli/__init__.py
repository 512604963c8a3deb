"""The command-line programs ssl-train, ssl-predict and ssl-tune (thin: options, files, messages).
"""

import signal as _signal

from ssl_cli import process as _process

# Ctrl-C while numpy, scipy and numba load: one line and status 130, not a traceback from
# inside an import (ssl_cli.process.run installs the handler for the run itself).
# An interrupt the parent had ignored (`nohup`, a background job of a script) stays ignored.
_process.sigint_ignored = _signal.getsignal(_signal.SIGINT) is _signal.SIG_IGN
if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _process.early_interrupt)

import solvers  # noqa: E402, F401 -- sets the thread pools up before numpy and numba load
