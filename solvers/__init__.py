"""The mathematics: solvers, kernels, models. No file I/O; progress through logging only."""

from solvers import runtime

# Thread pools sized to this process's CPUs and idle OpenMP threads asleep, set before numba
# and OpenBLAS read the environment (solvers.runtime says why).
runtime.configure()
