"""
Positive–unlabeled learning: the class prior and its interval
=============================================================

:class:`ssl_svm.USMO` (``ssl-train -a usmo``) learns from labeled positives and unlabeled
rows only. Its risk needs the class prior π, the share of positives among the unlabeled
rows; ``prior='auto'`` (``--prior auto``, the default) estimates it from the data with a
bootstrap interval, recorded in the model (``prior_``, ``prior_interval_``).

Here: two overlapping Gaussian classes in five dimensions, 200 labeled positives and 2,000
unlabeled rows drawn with a known π (the case-control setting of du Plessis et al.), for
several π. The estimate is printed by ``ssl-train`` as
``prior 0.31 (90 % interval 0.27-0.34)``.
"""

import matplotlib.pyplot as plt
import numpy as np

import ssl_svm

rng = np.random.default_rng(0)
truths = [0.2, 0.35, 0.5, 0.65, 0.8]
estimates, lows, highs, f_measures = [], [], [], []
for pi in truths:
    positives = rng.normal(1.0, 1.0, (200, 5))               # the labeled positives
    n_pos = rng.binomial(2000, pi)
    unlabeled = np.vstack([rng.normal(1.0, 1.0, (n_pos, 5)),
                           rng.normal(-1.0, 1.0, (2000 - n_pos, 5))])
    truth = np.r_[np.ones(n_pos), -np.ones(2000 - n_pos)]
    X = np.vstack([positives, unlabeled])
    s = np.r_[np.ones(200), np.zeros(2000)]                   # 1 = labeled positive, 0 = unlabeled
    pu = ssl_svm.USMO().fit(X, s)
    estimates.append(pu.prior_)
    lows.append(pu.prior_interval_[0])
    highs.append(pu.prior_interval_[1])
    predicted = pu.predict(unlabeled) == 1
    precision = np.mean(truth[predicted] == 1) if predicted.any() else 0.0
    recall = np.mean(predicted[truth == 1])
    f_measures.append(200 * precision * recall / max(precision + recall, 1e-12))
    print(f"π = {pi:.2f}: estimate {pu.prior_:.3f} (90 % interval {lows[-1]:.3f}-{highs[-1]:.3f}), "
          f"F-measure on the unlabeled rows {f_measures[-1]:.1f}")

# %%
# Estimates against the truth
# ---------------------------
est = np.array(estimates)
fig, ax = plt.subplots(figsize=(5.5, 4.5))
ax.plot([0, 1], [0, 1], "k:", lw=1, label="estimate = truth")
ax.errorbar(truths, est, yerr=[est - np.array(lows), np.array(highs) - est], fmt="o",
            capsize=4, label="prior='auto' and its 90 % interval")
ax.set_xlabel("true π (share of positives among the unlabeled rows)")
ax.set_ylabel("estimated π")
ax.set_xlim(0, 1)
ax.set_ylim(0, 1)
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The estimate is not exact: here it runs low as π grows (the smallest of many noisy ratios
# is picked). The interval's high end allows for that, and holds the truth at four of the
# five values. A wide interval comes with a warning (``SolverWarning``, as above), and the
# F-measure is forgiving of a few points of error. Where π is known, give it
# (``prior=0.4``, ``--prior 0.4``). The benchmarks page measures the estimator's error and its
# interval's coverage on nine UCI sets against DEDPUL, KM2 and Elkan–Noto.
