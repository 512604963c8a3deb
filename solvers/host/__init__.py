"""What a solver needs of the process it runs in, apart from the mathematics.

- :mod:`.pools`: how many threads numba and the BLAS run (CPU quotas, affinity, TBB, Dask
  workers' shares, a library call's limit), set before numba starts;
- :mod:`.numba_start`: numba's start and the line saying a first run compiles (a
  :class:`~.numba_start.Start` the command line sets), Python's collector paused around it, the
  clock of one-time work;
- :mod:`.budget`: whether a small linear fit starts on numpy or numba.
"""
