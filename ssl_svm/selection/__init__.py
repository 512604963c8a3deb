"""Model selection: how the toolkit chooses a solver, its parameters and its folds.

- :mod:`.stats`: the statistics of the check after a fit and of the rule (the paired
  comparison, the sign test, the bound of the loss) and the check's three verdicts;
- :mod:`.splits`: :class:`SemiSupervisedKFold`, the folds of ``ssl-tune`` and ``ssl-train -v``
  for scikit-learn's ``cv=``; how many folds labels allow; the label equality of any dtype;
- :mod:`.tuning`: grids, warm-started paths along them, fold problems, metrics
  (``ssl-tune``);
- :mod:`.rules`: the rule that keeps the supervised svm unless a semi-supervised candidate
  beats it beyond the folds' noise (max-T), and ``-a auto``'s candidates;
- :mod:`.auto`: ``ssl-tune -a auto`` and :class:`ssl_svm.Auto`, every candidate on the same
  folds, then the rule, then the winner refitted.

The folds themselves (:func:`ssl_svm.solvers.crossval.stratified_folds`) and the λ paths of
the solvers that choose λ inside their fit (``svm``, ``usmo``) stay with the solvers, which
call them.
"""
