"""
When the unlabeled rows hurt, and the check says so
===================================================

The classes here are split by a vertical line that runs *through* the dense regions, while
the unlabeled rows have their gap horizontally. A semi-supervised method that trusts the gap
puts the boundary in the wrong place. After every semi-supervised fit the estimators
cross-validate it against the supervised svm on the same folds of the labeled rows
(``check="auto"``, as ``ssl-train --check auto``) and give one of three verdicts:

* **harm** — a one-sided sign test on the held-out rows where the two disagree proves the
  fit worse (:class:`ssl_svm.UnlabeledHurtWarning`);
* **no harm** — it cannot be more than 2 points worse (nothing is said);
* **unverified** — neither; the warning (:class:`ssl_svm.UnverifiedWarning`) says the largest
  loss the labeled rows cannot rule out.

The verdict and its figures are in the estimator's ``check_``.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

import ssl_svm

rng = np.random.default_rng(1)
n = 600
X = np.vstack([rng.normal([0, -2.5], [2.0, 0.8], (n // 2, 2)),
               rng.normal([0, 2.5], [2.0, 0.8], (n // 2, 2))])
y_true = np.where(X[:, 0] > 0, 1, -1)       # the classes cut across both blobs
y = np.zeros(n)
labeled = rng.choice(n, 20, replace=False)
y[labeled] = y_true[labeled]

svm = ssl_svm.SVM(unlabeled_label=0).fit(X, y)
fits = {}
for est in (ssl_svm.TSVM(unlabeled_label=0), ssl_svm.LapSVM(unlabeled_label=0),
            ssl_svm.CheegerRLS(unlabeled_label=0)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ssl_svm.SSLWarning)
        est.fit(X, y)
    fits[type(est).__name__] = (est, [w for w in caught
                                      if issubclass(w.category, ssl_svm.SSLWarning)])

# %%
# What the check said
# -------------------
for name, (est, said) in fits.items():
    c = est.check_
    print(f"{name}: {c.verdict}, at most {c.upper_bound:.1f} points worse "
          f"(better on {c.better}, worse on {c.worse} of {c.n} held-out rows)")
    for w in said:
        print("   ", w.category.__name__, str(w.message)[:150], "...")

# %%
# The boundaries
# --------------
xx, yy = np.meshgrid(np.linspace(-7, 7, 200), np.linspace(-5.5, 5.5, 200))
grid = np.c_[xx.ravel(), yy.ravel()]
fig, axes = plt.subplots(1, 4, figsize=(17, 4))
for ax, (name, clf) in zip(axes, [("SVM", svm)] + [(k, v[0]) for k, v in fits.items()]):
    f = clf.decision_function(grid).reshape(xx.shape)
    ax.contourf(xx, yy, f > 0, alpha=0.15, cmap="coolwarm")
    ax.contour(xx, yy, f, levels=[0], colors="k")
    ax.scatter(X[:, 0], X[:, 1], s=5, c=np.where(y_true > 0, "tab:red", "tab:blue"), alpha=0.3)
    ax.scatter(X[labeled, 0], X[labeled, 1], s=70, edgecolors="k",
               c=np.where(y[labeled] > 0, "tab:red", "tab:blue"))
    verdict = "" if name == "SVM" else f"  ({clf.check_.verdict})"
    accuracy = 100 * np.mean(clf.predict(X) == y_true)
    ax.set_title(f"{name}: {accuracy:.1f} %{verdict}")
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle("20 labeled rows (large dots); colour: the true class")
fig.tight_layout()
plt.show()
