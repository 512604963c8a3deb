"""
Python ↔ command line: one model file
=====================================

An estimator's ``save`` writes the model file ``ssl-train`` writes, and ``ssl-predict``
reads it; ``ssl_svm.load`` turns a file that ``ssl-train`` wrote into a fitted estimator. The
predictions are the same either way, to the last digit: here the decision values that
``ssl-predict --values`` prints against the estimator's ``decision_function``.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import ssl_svm


def command(name):
    """The installed command beside this Python (the virtualenv's bin/)."""
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else name


train = ssl_svm.sample_path("pcmac.train")
test = ssl_svm.sample_path("pcmac.test")
X, y = ssl_svm.load_svmlight(train)
Xt, yt = ssl_svm.load_svmlight(test, n_features=X.shape[1])
work = Path(tempfile.mkdtemp())

# %%
# Python → ``ssl-predict``
# ------------------------
clf = ssl_svm.TSVM(lam=1e-3, unlabeled_label=0, check="none").fit(X, y)
clf.save(work / "python.model")
out = subprocess.run([command("ssl-predict"), "--values", test, work / "python.model",
                      work / "python.pred"], capture_output=True, text=True, check=True)
print("ssl-predict:", out.stderr.strip())
print(f"estimator:   Accuracy = {100 * clf.score(Xt, yt):g}%")
cli_values = np.loadtxt(work / "python.pred", usecols=1)

# %%
# ``ssl-train`` → Python
# ----------------------
subprocess.run([command("ssl-train"), "-q", "-a", "lapsvm", "--check", "none", train,
                work / "lap.model"], check=True)
lap = ssl_svm.load(work / "lap.model")
print(lap)
subprocess.run([command("ssl-predict"), "--values", test, work / "lap.model",
                work / "lap.pred"], capture_output=True, check=True)
lap_cli = np.loadtxt(work / "lap.pred", usecols=1)

# %%
# The same numbers
# ----------------
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
for ax, name, py, cli in ((axes[0], "TSVM saved from Python", clf.decision_function(Xt),
                           cli_values),
                          (axes[1], "lapsvm trained by ssl-train", lap.decision_function(Xt),
                           lap_cli)):
    ax.scatter(py, cli, s=10)
    lim = [min(py.min(), cli.min()), max(py.max(), cli.max())]
    ax.plot(lim, lim, "k:", lw=1)
    ax.set_xlabel("decision_function (Python)")
    ax.set_ylabel("ssl-predict --values")
    ax.set_title(f"{name}: largest difference {np.max(np.abs(py - cli)):.1e}", fontsize=9)
fig.tight_layout()
for f in work.iterdir():
    os.remove(f)
work.rmdir()
plt.show()
