"""Re-create the sample files from ../shared (run from the repository root).

pcmac.train: the 50 labeled rows and the first 450 unlabeled rows of
    ../shared/bench/pcmac-svmlin/train.svm, in file order (label 0 = unlabeled).
pcmac.test: the first 200 rows of ../shared/bench/pcmac-svmlin/test.svm.
shuttle.train / shuttle.test: 2000 / 1000 rows drawn without replacement
    (numpy default_rng(0)) from ../shared/datasets/shuttle/shuttle and shuttle.t, in file order.
"""

import numpy as np

SHARED = "../shared"


def lines(path):
    with open(path) as f:
        return [ln for ln in f if ln.strip()]


def main():
    rows = lines(f"{SHARED}/bench/pcmac-svmlin/train.svm")
    keep, unl = [], 0
    for ln in rows:
        if not ln.startswith("0 "):
            keep.append(ln)
        elif unl < 450:
            keep.append(ln)
            unl += 1
    open("sample_data/pcmac.train", "w").writelines(keep)
    open("sample_data/pcmac.test", "w").writelines(
        lines(f"{SHARED}/bench/pcmac-svmlin/test.svm")[:200])
    rng = np.random.default_rng(0)
    for src, dst, n in (("shuttle", "shuttle.train", 2000), ("shuttle.t", "shuttle.test", 1000)):
        all_rows = lines(f"{SHARED}/datasets/shuttle/{src}")
        pick = np.sort(rng.choice(len(all_rows), n, replace=False))
        open(f"sample_data/{dst}", "w").writelines(all_rows[i] for i in pick)


if __name__ == "__main__":
    main()
