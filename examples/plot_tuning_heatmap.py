"""
A tuning surface: TSVM's λ and λu
=================================

``ssl-tune -a tsvm -G lambda=... -G lambda_u=...`` searches a grid with warm starts; from
Python the same search is scikit-learn's ``GridSearchCV`` with
:class:`ssl_svm.SemiSupervisedKFold`, whose folds hold out labeled rows only and keep every
unlabeled row in every training part (a plain ``KFold`` would score unlabeled rows and leave
some folds without them). ``check="none"``: the grid search already measures each fit.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV

import ssl_svm

X, y = ssl_svm.load_svmlight(ssl_svm.sample_path("pcmac.train"))
lams = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
lambda_us = [0.01, 0.1, 1.0, 10.0]
cv = ssl_svm.SemiSupervisedKFold(n_splits=5, unlabeled_label=0, random_state=0)
search = GridSearchCV(ssl_svm.TSVM(unlabeled_label=0, check="none"),
                      {"lam": lams, "lambda_u": lambda_us}, cv=cv).fit(X, y)
print("best:", search.best_params_, f"{100 * search.best_score_:.1f} %")

# %%
# The surface
# -----------
scores = 100 * search.cv_results_["mean_test_score"].reshape(len(lams), len(lambda_us))
fig, ax = plt.subplots(figsize=(6, 4))
im = ax.imshow(scores, cmap="viridis", origin="lower")
ax.set_xticks(range(len(lambda_us)), [f"{v:g}" for v in lambda_us])
ax.set_yticks(range(len(lams)), [f"{v:g}" for v in lams])
ax.set_xlabel("λu (weight of the unlabeled rows, -U)")
ax.set_ylabel("λ (regularisation, -W)")
for i in range(len(lams)):
    for j in range(len(lambda_us)):
        ax.text(j, i, f"{scores[i, j]:.0f}", ha="center", va="center",
                color="w" if scores[i, j] < scores.max() - 5 else "k")
fig.colorbar(im, label="5-fold accuracy on the labeled rows (%)")
ax.set_title("pcmac sample: 50 labeled rows, 450 unlabeled")
fig.tight_layout()
plt.show()
