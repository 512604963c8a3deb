"""ssl_svm: semi-supervised and positive-unlabeled SVMs (SVMlin's linear S3VMs, Laplacian
SVM/RLS in the primal, graph total-variation SVM/RLS, USMO), from Python and from the
command line (``ssl-train``, ``ssl-predict``, ``ssl-tune``, ``ssl-export``).

The estimators follow scikit-learn's contract; unlabeled rows are marked -1 in y, as in
scikit-learn's ``semi_supervised`` module::

    import ssl_svm
    clf = ssl_svm.TSVM(lam=1e-3).fit(X, y)        # y: -1 = unlabeled
    clf.predict(X_test); clf.transduction_
    clf.save("tsvm.model")                       # ssl-predict test.svm tsvm.model out
    clf = ssl_svm.load("tsvm.model")

``import ssl_svm`` is cheap and changes nothing in the host process: the estimators (and
scikit-learn, numpy, numba under them) load when first used.
"""

from __future__ import annotations

import importlib

_LAZY = {
    # estimators, one per solver (ssl-train -a NAME)
    "RLS": "estimators", "SVM": "estimators", "TSVM": "estimators", "DAS3VM": "estimators",
    "LapSVM": "estimators", "LapRLS": "estimators", "USMO": "estimators",
    "TVRLS": "estimators", "TVSVM": "estimators", "CheegerRLS": "estimators",
    "CheegerSVM": "estimators", "SSLClassifier": "estimators", "estimator": "estimators",
    "load": "estimators", "ESTIMATORS": "estimators", "Auto": "estimators",
    "SemiSupervisedKFold": "selection.splits", "load_svmlight": "data", "sample_path": "data",
    # exceptions and warning categories
    "DataError": "exceptions", "ProblemError": "exceptions", "NonFiniteError": "exceptions",
    "MemoryLimitError": "exceptions", "SSLWarning": "exceptions",
    "SettingWarning": "exceptions", "DegenerateFitWarning": "exceptions",
    "LopsidedWarning": "exceptions", "LabelWarning": "exceptions",
    "SolverWarning": "exceptions", "UnlabeledHurtWarning": "exceptions",
    "UnverifiedWarning": "exceptions",
    "UncheckedWarning": "exceptions",
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("ssl-svm")
        except PackageNotFoundError:  # run from a checkout that is not installed
            return "unknown"
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ssl_svm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ssl_svm.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
