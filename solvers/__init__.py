"""The mathematics: solvers, kernels, models. No file I/O; progress through logging only."""
