"""
One fit over a Dask cluster
===========================

``ssl-train --cluster ADDRESS`` spreads the rows of one linear fit (``rls``, ``svm``,
``tsvm``, ``da``) over Dask workers: each worker reads its own part of the file and keeps its
rows for the whole fit; the command holds only vectors as long as the number of features.
The mathematics is that of one process: the objective agrees to about 1e-9 and the labels
are the same.

Here the cluster is a scheduler and two single-threaded workers started on this machine with
Dask's own commands, as a job script would start them on a cluster's nodes (there the
address is the head node's, ``tcp://head:8786``); it needs the ``cluster`` extra
(``pip install 'dask[distributed]'``).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from distributed import Client

import ssl_svm


def command(name):
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else name


def stat(model: Path, name: str) -> float:
    line = next(x for x in model.read_text().splitlines() if x.startswith(f"stat {name} "))
    return float(line.split()[2])


train = ssl_svm.sample_path("pcmac.train")
test = ssl_svm.sample_path("pcmac.test")
work = Path(tempfile.mkdtemp())

# dask scheduler / dask worker, as on a cluster's head and compute nodes
where = work / "scheduler.json"
scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                              "127.0.0.1", "--port", "0", "--no-dashboard",
                              "--scheduler-file", where], stderr=subprocess.DEVNULL)
workers = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                            "--scheduler-file", where,
                            "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                           stderr=subprocess.DEVNULL)
try:
    with Client(scheduler_file=str(where), timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    address = json.loads(where.read_text())["address"]
    args = ["-a", "tsvm", "-W", "1e-3", "--check", "none", train]
    spread = subprocess.run([command("ssl-train"), "--cluster", address, *args,
                             work / "cluster.model"], capture_output=True, text=True)
    if spread.returncode != 0:  # the command's own error line, not just "exit status 1"
        raise RuntimeError(spread.stderr)
finally:
    for process in (workers, scheduler):
        process.terminate()
        process.wait(timeout=60)
print(spread.stderr)
subprocess.run([command("ssl-train"), "-q", *args, work / "local.model"], check=True)

# %%
# The same model
# --------------
for name in ("cluster", "local"):
    print(f"{name:>7}: objective {stat(work / f'{name}.model', 'objective'):.12g}")
values = {}
for name in ("cluster", "local"):
    subprocess.run([command("ssl-predict"), "--values", test, work / f"{name}.model",
                    work / f"{name}.pred"], capture_output=True, check=True)
    values[name] = np.loadtxt(work / f"{name}.pred", usecols=1)

fig, ax = plt.subplots(figsize=(5, 4.5))
ax.scatter(values["local"], values["cluster"], s=10)
lim = [values["local"].min(), values["local"].max()]
ax.plot(lim, lim, "k:", lw=1)
ax.set_xlabel("decision value, one process")
ax.set_ylabel("decision value, two Dask workers")
ax.set_title(f"largest difference {np.max(np.abs(values['local'] - values['cluster'])):.1e}")
fig.tight_layout()
for f in work.iterdir():
    f.unlink()
work.rmdir()
plt.show()
