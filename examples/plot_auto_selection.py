"""
Which solver, if any? ``ssl-tune -a auto``'s selection
======================================================

:class:`ssl_svm.Auto` (``ssl-tune -a auto`` from the shell) cross-validates the supervised
svm and the semi-supervised candidates on the same folds of the labeled rows, with every
unlabeled row in every training part, and keeps the svm **unless a candidate beats it by more
than the folds' noise allows for the best of all the points tried**. Here: the 50 labeled and
450 unlabeled rows of the sample text file (pcmac).
"""

import matplotlib.pyplot as plt
import numpy as np

import ssl_svm

X, y = ssl_svm.load_svmlight(ssl_svm.sample_path("pcmac.train"))   # 0 marks unlabeled rows
best = ssl_svm.Auto(unlabeled_label=0).fit(X, y)

# %%
# The decision and the table behind it
# ------------------------------------
print(best.decision_)
header = ("candidate", "best point", "CV accuracy", "vs svm", "s.e.")
print(f"\n{header[0]:<12} {header[1]:<22} {header[2]:>11} {header[3]:>7} {header[4]:>5}  verdict")
for row in best.selection_:
    point = ", ".join(f"{k}={v}" for k, v in row["point"].items()) or "defaults"
    print(f"{row['algorithm']:<12} {point:<22} {row['score']:>10.1f}% {row['difference']:>+7.1f} "
          f"{row['se']:>5.1f}  {row['verdict']}: {row['reason']}")

# %%
# The same as a picture: each candidate's lead over the svm, with the bar it had to clear
# ----------------------------------------------------------------------------------------
rows = [r for r in best.selection_ if r["verdict"] != "baseline"]
threshold = float(best.decision_.split("must exceed ")[1].split(" ")[0])
names = [r["algorithm"] for r in rows]
lead = np.array([r["difference"] for r in rows])
se = np.array([r["se"] for r in rows])
colours = ["tab:green" if r["verdict"] == "chosen" else "tab:gray" for r in rows]
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.barh(names, lead, color=colours)
ax.errorbar(lead, names, xerr=se, fmt="none", ecolor="k", capsize=3, label="± 1 standard error")
ax.scatter(threshold * se, names, marker="|", s=400, c="tab:red",
           label=f"the bar: {threshold:g} standard errors")
ax.axvline(0, c="k", lw=0.8)
ax.set_xlabel("cross-validated accuracy minus the svm's (points)")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()

# %%
# The winner is a fitted estimator: predict, or save a model file for ``ssl-predict``
Xt, yt = ssl_svm.load_svmlight(ssl_svm.sample_path("pcmac.test"), n_features=X.shape[1])
print(best.best_estimator_, f"test accuracy {100 * best.score(Xt, yt):.1f} %")
plt.show()
