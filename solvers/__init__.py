"""The mathematics: solvers, kernels, models. No file I/O; progress through logging only.

Importing it changes nothing in the host process: the thread-pool set-up of the commands
(:func:`ssl_svm.solvers.host.pools.configure`) is the command line's to make, for its own process.
"""
