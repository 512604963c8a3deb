"""
Time and memory against rows, for each family
=============================================

What one fit costs on the project's 2-core machine as the rows grow, from the tables of
the benchmarks page (each series names its section; ``make bench`` re-measures them). Time is
wall time of the fit; memory the process's peak resident size where the table gives it.

- **linear** (``tsvm``): generated sparse rows, 50 stored values among 100,000 features,
  200 labeled; time grows linearly with the stored values (slope 1.0).
- **manifold** (``lapsvm``): generated rows; the exact n×n kernel to 10,000 rows, then
  2,000 landmark rows; the kNN graph is exact to 100,000 rows, approximate above.
- **total variation** (``cheeger-rls``, mnist's 10 digits): the exact kernel grows as n³
  in time and n² in memory (20,000 rows would need 6.4 GB); ``--nystrom 1000`` does not.
- **positive–unlabeled** (``usmo``, linear): a million text-like rows × a million features
  in 35 s, beside LIBLINEAR's biased SVM on the same rows (30 s).
"""

import matplotlib.pyplot as plt
import numpy as np

# (rows, seconds, peak GiB or nan): the benchmarks page's tables
series = {
    "tsvm (linear; 'tsvm and da against the number of rows')": (
        [1e4, 3e4, 1e5, 3e5, 1e6], [1.2, 3.4, 11.0, 38.0, 124.0], [np.nan] * 5),
    "lapsvm, landmarks above 10⁴ ('The graph and kernel solvers on large data')": (
        [1e4, 3e4, 1e5, 3e5, 1e6], [8, 13, 63, 80, 281], [1.00, 0.47, 0.53, 0.63, 0.95]),
    "cheeger-rls, exact kernel ('TV family')": (
        [1e3, 5e3, 1e4], [1.8, 49.1, 198.5], [np.nan] * 3),
    "cheeger-rls, --nystrom 1000 ('TV family')": (
        [1e3, 5e3, 1e4, 2e4, 6e4], [2.3, 8.5, 22.5, 45.1, 284.5],
        [np.nan, np.nan, np.nan, np.nan, 1.85 / 1.074]),
    "usmo, linear, 10⁶ features ('usmo on a million text-like rows')": (
        [1e6], [34.6], [1.44]),
    "LIBLINEAR biased SVM, same rows (reference)": ([1e6], [30.1], [0.86]),
}

fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 4.6))
markers = iter("osD^*x")
for label, (rows, seconds, gib) in series.items():
    m = next(markers)
    ax_t.loglog(rows, seconds, marker=m, label=label)
    gib = np.asarray(gib, float)
    if np.isfinite(gib).any():
        keep = np.isfinite(gib)
        ax_m.semilogx(np.asarray(rows)[keep], gib[keep], marker=m, label=label)
ax_t.set_xlabel("training rows")
ax_t.set_ylabel("fit time (s), 2 cores")
ax_t.grid(True, which="both", alpha=0.3)
ax_t.legend(fontsize=7, loc="lower right")
ax_m.set_xlabel("training rows")
ax_m.set_ylabel("peak memory (GiB)")
ax_m.set_ylim(0, 2.2)
ax_m.grid(True, which="both", alpha=0.3)
ax_m.legend(fontsize=7, loc="lower right")
fig.tight_layout()
plt.show()
