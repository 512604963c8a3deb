"""Kernels in LIBSVM's conventions, evaluated blockwise.

linear: ``x·z``; rbf: ``exp(-gamma ||x - z||^2)``; poly: ``(gamma x·z + coef0)^degree``.
Inputs are CSR (or dense) row matrices; a kernel block is computed for at most ``block_rows``
rows of the first argument at a time, so callers never hold more than
``block_rows x len(Z)`` kernel values at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

KERNELS = ("linear", "poly", "rbf")
LIBSVM_KERNEL_NUMBERS = {"0": "linear", "1": "poly", "2": "rbf"}


@dataclass(frozen=True)
class KernelSpec:
    """A kernel and its parameters (LIBSVM's -t, -g, -d, -r)."""

    name: str
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ValueError(f"unknown kernel '{self.name}' (choose from {', '.join(KERNELS)})")


def _dot(A, Z) -> np.ndarray:
    out = A @ Z.T
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def _sqnorms(A) -> np.ndarray:
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


def kernel_block(spec: KernelSpec, A, Z, z_sqnorms: np.ndarray | None = None) -> np.ndarray:
    """The dense kernel matrix K(A, Z), shape (rows of A, rows of Z)."""
    G = _dot(A, Z)
    if spec.name == "linear":
        return G
    if spec.name == "poly":
        return (spec.gamma * G + spec.coef0) ** spec.degree
    zn = _sqnorms(Z) if z_sqnorms is None else z_sqnorms
    D = _sqnorms(A)[:, None] + zn[None, :] - 2.0 * G
    np.maximum(D, 0.0, out=D)  # rounding can make tiny distances negative
    return np.exp(-spec.gamma * D)


def kernel_times(spec: KernelSpec, A, Z, C: np.ndarray, block_rows: int = 2048) -> np.ndarray:
    """K(A, Z) @ C computed over blocks of rows of A; C has shape (rows of Z, k)."""
    n = A.shape[0]
    out = np.empty((n, C.shape[1]))
    zn = _sqnorms(Z) if spec.name == "rbf" else None
    for s in range(0, n, block_rows):
        out[s:s + block_rows] = kernel_block(spec, A[s:s + block_rows], Z, zn) @ C
    return out
