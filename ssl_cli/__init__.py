"""The command-line programs ssl-train, ssl-predict and ssl-tune (thin: options, files, messages).
"""

import signal as _signal

from ssl_svm.cli import process as _process

# Ctrl-C while numpy, scipy and numba load: one line and status 130, not a traceback from
# inside an import (ssl_cli.process.run installs the handler for the run itself).
# An interrupt the parent had ignored (`nohup`, a background job of a script) stays ignored.
_process.sigint_ignored = _signal.getsignal(_signal.SIGINT) is _signal.SIG_IGN
if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _process.early_interrupt)

from ssl_svm.solvers.host import pools as _pools  # noqa: E402

# Thread pools sized to this process's CPUs and idle OpenMP threads asleep, set before numba
# and OpenBLAS read the environment (ssl_svm.solvers.runtime says why). The commands own their
# process; the library (import ssl_svm) leaves its host's environment alone.
_pools.configure()
# numpy's f2py and testing, which scipy's import touches and no command uses, load only if used
_process.defer_unused_imports()
