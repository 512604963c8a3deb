"""
The unlabeled rows move the boundary
====================================

One or two labeled rows per class and a few hundred unlabeled ones. The supervised
:class:`ssl_svm.SVM` sees only the labeled rows, so its boundary runs wherever those few
points put it. :class:`ssl_svm.TSVM` pushes the boundary out of the dense regions of the
unlabeled rows (the cluster assumption), and :class:`ssl_svm.LapSVM` makes it follow the
graph of nearest neighbours (the manifold assumption).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

import ssl_svm

rng = np.random.default_rng(0)


def boundary(ax, clf, X, y, y_true, title):
    xx, yy = np.meshgrid(np.linspace(X[:, 0].min() - 0.5, X[:, 0].max() + 0.5, 200),
                         np.linspace(X[:, 1].min() - 0.5, X[:, 1].max() + 0.5, 200))
    f = clf.decision_function(np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
    ax.contourf(xx, yy, f > 0, alpha=0.15, cmap="coolwarm")
    ax.contour(xx, yy, f, levels=[0], colors="k")
    ax.scatter(X[y == 0, 0], X[y == 0, 1], s=6, c="0.6", label="unlabeled")
    for c, colour in ((-1, "tab:blue"), (1, "tab:red")):
        ax.scatter(X[y == c, 0], X[y == c, 1], s=90, c=colour, edgecolors="k",
                   label=f"labeled {c:+d}")
    accuracy = np.mean(clf.predict(X) == y_true)
    ax.set_title(f"{title}: {100 * accuracy:.1f} % of all rows right")
    ax.set_xticks([])
    ax.set_yticks([])


# %%
# Two elongated blobs with a gap between them: TSVM against the svm
# ------------------------------------------------------------------
n = 400
X = np.vstack([rng.normal([-2, 0], [1.0, 2.0], (n // 2, 2)),
               rng.normal([2, 0], [1.0, 2.0], (n // 2, 2))])
y_true = np.r_[-np.ones(n // 2), np.ones(n // 2)]
# one labeled row per class, at opposite ends of the blobs: the worst case for the svm
left = int(np.argmin(np.abs(X[: n // 2, 1] - 3) + np.abs(X[: n // 2, 0] + 1)))
right = n // 2 + int(np.argmin(np.abs(X[n // 2:, 1] + 3) + np.abs(X[n // 2:, 0] - 1)))
y = np.zeros(n)                       # 0 marks an unlabeled row (the files' convention)
y[[left, right]] = y_true[[left, right]]

svm = ssl_svm.SVM(lam=1e-2, unlabeled_label=0).fit(X, y)
tsvm = ssl_svm.TSVM(lam=1e-2, unlabeled_label=0, check="none").fit(X, y)

fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
boundary(axes[0], svm, X, y, y_true, "svm")
boundary(axes[1], tsvm, X, y, y_true, "tsvm")
axes[0].legend(loc="lower left", fontsize=8)
fig.tight_layout()

# %%
# Two moons: LapSVM against the svm
# ---------------------------------
Xm, ym = make_moons(300, noise=0.08, random_state=0)
ym = 2 * ym - 1
y = np.zeros(300)
for c in (-1, 1):
    first = np.flatnonzero(ym == c)[:2]
    y[first] = c

svm = ssl_svm.SVM(unlabeled_label=0).fit(Xm, y)
lap = ssl_svm.LapSVM(unlabeled_label=0, check="none").fit(Xm, y)

fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
boundary(axes[0], svm, Xm, y, ym, "svm")
boundary(axes[1], lap, Xm, y, ym, "lapsvm (rbf kernel, 6-NN graph)")
fig.tight_layout()
plt.show()
