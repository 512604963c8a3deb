"""The cluster's transport: a long-lived host of row blocks on each Dask worker, and the
client's connections to them.

Each worker holds one :class:`BlockHost` (a Dask actor) with the rows of its part of TRAIN and
of ``--unlabeled`` as blocks of one registered type (:data:`BLOCK_TYPES`: the linear family's
:class:`ssl_svm.solvers.blocks.Block`, the graph family's
:class:`ssl_svm.solvers.graph_blocks.GraphBlock`), for the whole fit; a driver runs here and
sends each host one call per step, naming a public method of its blocks (nothing else is looked
up), so this process holds vectors of the fit's size, never the rows.

Reading (:func:`load`): when every worker sees the file at the same path with the same size
(a shared file system), each host reads its own line-aligned byte ranges
(:mod:`ssl_svm.formats.ranges`) and parses them with the same parser as a one-process run,
hashing the bytes it parses; this process hashes the same ranges of its file in one pass
(which counts their lines, so errors name the file's own line numbers), and a range whose
hashes differ (a stale node-local copy) is shipped from here instead. Otherwise (the file only
here, or compressed) this process reads it piece by piece and ships each piece to the host
whose share of the file it falls in: one piece in memory here at a time.

The calls go over one TCP connection per worker that the host opens for this process
(:mod:`ssl_svm.channel`: authenticated before anything is decoded, a typed format, TLS as the
cluster's), a collective of its own as XGBoost and LightGBM do on Dask: a Dask actor call costs
4-5 ms here, a round trip on the connection about 0.1 ms, and a fit makes one per CG iteration.

Block order is row order (TRAIN's ranges, then ``--unlabeled``'s); sums are taken in that
order, so the same cluster layout gives the same model bytes. A lost worker is a
:class:`WorkerLost`, and :func:`run` starts the work over on the workers left.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import re
import selectors
import socket
import threading
import time
from dataclasses import dataclass

import numpy as np

from ssl_svm import channel
from ssl_svm.formats import ranges
from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.host import numba_start

log = logging.getLogger("ssl.cluster")

# times a fit starts over after losing a worker (its rows read again on the workers left)
RESTARTS = 3
# how long a restart waits for the scheduler to list a live worker when none is left
WORKER_WAIT = 10.0
# the longest wait on the scheduler or a worker outside a fit's own steps (creating a host,
# its channel, the scheduler's list of workers): a dead worker is an error, never a hang
CALL_SECONDS = 60.0


@dataclass(frozen=True)
class BlockType:
    """A kind of block a host holds: its class (``module:Class``, built as
    ``Class(X, y, cost, first_row, threads)`` from a part's parsed rows), and optionally the
    function that runs a whole fit over one host's blocks (``module:function``, called as
    ``f(LocalBlocks(blocks, d), *args, **kwargs)``: a cluster of one worker then pays no round
    trips)."""

    block: str
    drive: str | None = None


BLOCK_TYPES = {
    "linear": BlockType("ssl_svm.solvers.blocks:Block", "ssl_svm.solvers.distributed:fit_model"),
    "graph": BlockType("ssl_svm.solvers.graph_blocks:GraphBlock"),
}


def resolve(spec: str):
    """The object ``module:name`` names."""
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


class WorkerLost(DataError):
    """A worker holding blocks of the fit went away (its connection broke): ``where`` is its
    address. The rows it held are gone with it; :func:`run` reads them again elsewhere."""


class SchedulerLost(DataError):
    """The client's connection to the Dask scheduler is gone (``where``: its address)."""




# --------------------------------------------------------------------------- on the workers

class _Forward(logging.Handler):
    """Sends the log records of the serving thread's work to the client, as ("log", level,
    logger, message) messages ahead of the answer."""

    def __init__(self, conn):
        super().__init__(logging.DEBUG)
        self.conn = conn
        self.thread = threading.get_ident()

    def emit(self, record):
        if threading.get_ident() != self.thread:
            return
        try:
            channel.send(self.conn, ("log", record.levelno, record.name, record.getMessage()))
        except (OSError, channel.WireError):
            pass


# what a client may ask of a host, and of the blocks it holds: nothing else is looked up
HOST_METHODS = frozenset({"call", "call_each", "drive", "read_range", "receive",
                          "receive_rows", "finish", "peer_listen", "peer_connect",
                          "exchange_then",
                          "echo", "memory", "bye"})
# how long a client waits for a host to put its worker's settings back when it leaves
BYE_SECONDS = 10.0
# how long a host waits for its client's connection before it closes its listener
ACCEPT_SECONDS = 300.0
MAX_PENDING = 256  # unauthenticated connections at once: the oldest is dropped beyond


def block_methods(cls) -> frozenset:
    """The public methods of block class ``cls`` (its own and inherited): what a client may
    call on its blocks."""
    return frozenset(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))


def error_reply(e: BaseException) -> tuple:
    """("error", type name, message, fields) for an exception raised by a request: what the
    client needs to raise it again (:func:`raise_reply`), as plain values."""
    fields = {}
    if isinstance(e, DataError):
        fields = {"where": str(e.where), "message": str(e.message),
                  "line": None if e.line is None else int(e.line)}
    elif hasattr(e, "row"):
        fields = {"row": None if e.row is None else int(e.row)}
    one = len(e.args) == 1 and isinstance(e.args[0], str)  # KeyError's str() quotes it
    return ("error", type(e).__name__, e.args[0] if one else str(e), fields)


_BUILTIN_ERRORS = {c.__name__: c for c in (
    ValueError, TypeError, KeyError, IndexError, MemoryError, OSError, RuntimeError,
    ZeroDivisionError, FloatingPointError, ArithmeticError, AttributeError, AssertionError)}


def raise_reply(kind: str, message: str, fields: dict):
    """Raise the exception a host reported (:func:`error_reply`): the project's own types and
    the builtin ones by name, any other as a RuntimeError naming it."""
    from ssl_svm.solvers.errors import MemoryLimitError, NonFiniteError, ProblemError

    if kind in ("DataError", "WorkerLost"):
        cls = WorkerLost if kind == "WorkerLost" else DataError
        raise cls(fields.get("where", "worker"), fields.get("message", message),
                  fields.get("line"))
    if kind == "NonFiniteError":
        raise NonFiniteError(message, fields.get("row"))
    own = {"ProblemError": ProblemError, "MemoryLimitError": MemoryLimitError}
    cls = own.get(kind) or _BUILTIN_ERRORS.get(kind)
    if cls is not None:
        raise cls(message)
    raise RuntimeError(f"on a Dask worker: {kind}: {message}")


def worker_host(address: str) -> str:
    """The host part of a Dask worker's address, as Dask parses it ('tcp://[::1]:4001' ->
    '::1', 'tls://10.1.2.3:4001' -> '10.1.2.3'): the block host listens there."""
    from distributed.comm import get_address_host

    return get_address_host(address)


class BlockHost:
    """A worker's rows (one block of type ``kind``, :data:`BLOCK_TYPES`, per part of a file it
    holds) and the fit running on them; lives on the worker as a Dask actor.

    It serves one client on a TCP connection of its own (:mod:`ssl_svm.channel`): bound to the
    worker's address, TLS with the worker's certificates when the cluster has them, and open
    only to a peer that proves it holds the token this host drew (the client gets it through
    Dask); the listener closes once that client is in."""

    def __init__(self, threads: int, kind: str = "linear"):
        if kind not in BLOCK_TYPES:
            raise ValueError(f"no block type {kind!r}")
        self.kind = BLOCK_TYPES[kind]
        self.threads = max(1, int(threads))
        self.slots = []
        self.pieces: dict[int, list] = {}
        self.token = channel.new_token()
        security = None
        try:
            from distributed import get_worker

            worker = get_worker()
            security = worker.security
            host = worker_host(worker.address)
            self.name = worker.address
        except (ImportError, ValueError):
            host = "127.0.0.1"
            self.name = "the worker"
        self.tls = channel.tls_context(security, "host")
        self.peer_tls = channel.tls_context(security, "peer")  # to connect to another host
        self.peer_socks: dict[int, socket.socket] = {}  # the other hosts of the fit, by index
        self.peer_listener = None
        self.listener = socket.create_server(
            (host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.where = (host, self.listener.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True, name="ssl-block-host").start()

    def channel(self) -> tuple:
        """(host, port, token, whether the connection is TLS) of the connection this host
        serves."""
        return self.where + (self.token, self.tls is not None)

    def _accept(self, listener=None, token=None, count: int = 1,
                seconds: float = ACCEPT_SECONDS) -> list:
        """The first ``count`` connections to ``listener`` (default: the client's) whose
        peers complete the handshake with ``token`` (default: the client's), TLS inside when
        the worker has TLS; fewer (none) if they do not within ``seconds``. Every pending
        handshake runs in this one thread on non-blocking sockets, each closed after
        :data:`channel.HANDSHAKE_SECONDS`: strangers neither hold a thread nor delay the
        client. The listener is closed on return."""
        listener = self.listener if listener is None else listener
        token = self.token if token is None else token
        sel = selectors.DefaultSelector()
        listener.setblocking(False)
        sel.register(listener, selectors.EVENT_READ, None)
        pending: dict = {}
        done: list = []
        give_up = time.monotonic() + seconds

        def drop(c):
            pending.pop(c, None)
            try:
                sel.unregister(c)
            except (KeyError, ValueError):
                pass
            c.close()

        try:
            while True:
                now = time.monotonic()
                if now >= give_up:
                    return done
                for c, hs in list(pending.items()):
                    if hs.deadline <= now:
                        drop(c)
                wait = min([give_up] + [hs.deadline for hs in pending.values()]) - now
                for key, _ in sel.select(max(0.0, wait)):
                    if key.data is None:
                        try:
                            c, _ = listener.accept()
                        except OSError:
                            continue
                        if len(pending) >= MAX_PENDING:  # a stranger's, never the client's
                            drop(min(pending, key=lambda k: (pending[k].ticketed,
                                                             pending[k].deadline)))
                        c.setblocking(False)
                        if self.tls is not None:
                            try:
                                c = self.tls.wrap_socket(c, server_side=True,
                                                         do_handshake_on_connect=False)
                            except (OSError, ValueError):
                                c.close()
                                continue
                        hs = channel.ServerHandshake(c, token, now + channel.HANDSHAKE_SECONDS)
                        pending[c] = hs
                        sel.register(c, selectors.EVENT_READ | selectors.EVENT_WRITE, hs)
                        continue
                    hs = key.data
                    c = hs.sock
                    if c not in pending:
                        continue
                    try:
                        ok = hs.step()
                    except (OSError, ValueError, channel.AuthenticationError):
                        drop(c)
                        continue
                    if not ok:
                        sel.modify(c, selectors.EVENT_READ | (
                            selectors.EVENT_WRITE if hs.wants_write else 0), hs)
                        continue
                    pending.pop(c)
                    sel.unregister(c)
                    last = len(done) + 1 == count
                    if last:
                        # closed before the proof goes out: once the last peer is in,
                        # nobody else can connect, not even for the moment the proof takes
                        listener.close()
                    c.setblocking(True)
                    try:
                        c.sendall(hs.proof)
                    except OSError:
                        c.close()
                        if last:
                            return done
                        continue
                    done.append(c)
                    if last:
                        return done
        finally:
            for c in list(pending):
                drop(c)
            sel.close()
            listener.close()

    def _serve(self) -> None:
        """Serve the client's requests, ("req", method, args) in, ("ok", result) or an
        :func:`error_reply` out, until it goes; the rows are dropped then."""
        conns = self._accept()
        if not conns:
            return
        conn = conns[0]
        channel.configure_socket(conn)
        blocks = block_methods(resolve(self.kind.block))
        forward = _Forward(conn)
        ours = logging.getLogger("ssl")
        ours.addHandler(forward)
        ours.propagate = False  # the client says them; the worker's own log stays quiet
        try:
            bye = False
            with self._fit_settings(), numba_start.starting(
                    hook=self._compile_notice(conn), label="the cluster fit on this worker"):
                while not bye:
                    msg = channel.recv(conn)
                    try:
                        kind, method, args = msg
                        if kind != "req" or method not in HOST_METHODS or \
                                not isinstance(args, tuple):
                            raise channel.WireError(f"not a request: {method!r}")
                        if method == "bye":  # answered once the settings are put back
                            bye = True
                            continue
                        if method in ("call", "call_each") and (
                                len(args) != 3 or args[1] not in blocks):
                            raise channel.WireError(f"no block method {args[1:2]!r}")
                        if method == "exchange_then" and (
                                len(args) != 4 or not isinstance(args[1], str)
                                or not (args[2] is None or args[2] in blocks)):
                            raise channel.WireError(f"no block method {args[2:3]!r}")
                        if method == "call_each" and not (
                                isinstance(args[2], (tuple, list)) and len(args[2]) == len(args[0])
                                and all(isinstance(a, (tuple, list)) for a in args[2])):
                            raise channel.WireError("call_each: one argument list per block")
                        out = ("ok", getattr(self, method)(*args))
                    except Exception as e:  # sent back: the client raises it
                        out = error_reply(e)
                    try:
                        channel.send(conn, out)
                    except channel.WireError as e:
                        channel.send(conn, error_reply(RuntimeError(
                            f"the answer to {msg[1]!r} cannot be sent: {e}")))
            self._close_peers()
            channel.send(conn, ("ok", None))  # bye: the worker's settings are its own again
        except (OSError, channel.WireError):
            pass
        finally:
            ours.removeHandler(forward)
            ours.propagate = True
            conn.close()
            self._close_peers()
            self.slots = []
            self.pieces = {}

    def _compile_notice(self, conn):
        """The hook that says, on the client, that this worker compiles the solvers' numba
        code (a first fit on a cold cache takes that much longer): sent from the serving
        thread only, as a log message ahead of the answer."""
        serving = threading.get_ident()

        def hook(text: str, warning: bool) -> None:
            if threading.get_ident() != serving:
                return
            try:
                channel.send(conn, ("log", logging.WARNING if warning else logging.INFO,
                                    "ssl.runtime", f"{self.name}: {text}"))
            except (OSError, channel.WireError):
                pass

        return hook

    @contextlib.contextmanager
    def _fit_settings(self):
        """The commands' thread-pool settings for the fit (TBB loadable, idle OpenMP threads
        asleep: they spin otherwise and take the core from the worker's next step; they count
        only if numba starts its threads here) and numba's threads at this host's share; the
        worker's environment and its thread setting put back after it (a Dask worker runs
        other tasks, and other users' tasks, too). ``NUMBA_NUM_THREADS`` is never written: the
        pool keeps numba's own size (the worker's CPUs), as any change of it in the environment
        once the pool runs makes numba's next compile raise, here or in another task."""
        from ssl_svm.solvers.host import pools

        saved = {k: os.environ.get(k) for k in pools.POOL_VARIABLES}
        pools.configure(pool_size=False)
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))
        try:
            yield
        finally:
            numba.set_num_threads(before)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def drive(self, d: int, level: int, args: tuple, kwargs: dict):
        """The block type's whole fit (:attr:`BlockType.drive`) run here over this host's
        blocks (all the blocks, when the cluster has one worker: the steps then cost no round
        trips); its log records from ``level`` up go to the client as they come."""
        from ssl_svm.solvers.distributed import LocalBlocks

        if self.kind.drive is None:
            raise ValueError("these blocks have no fit of their own to drive")
        logging.getLogger("ssl").setLevel(level)
        return resolve(self.kind.drive)(LocalBlocks(self.slots, d), *args, **kwargs)

    def read_range(self, slot: int, path: str, start: int, end: int, first_line: int,
                   zero_based: bool, unlabeled: bool, first_row: int = 0) -> dict:
        """Parse the lines in [start, end) (aligned) of ``path`` into block ``slot``; returns
        its summary."""
        from ssl_svm.formats.svmlight import iter_line_blocks, parse_block

        parts = []
        digest = ranges.range_digest()
        try:
            with open(path, "rb") as f:
                rng = ranges.open_range(f, start, end, digest)
                try:
                    for block, first in iter_line_blocks(rng, path, first_line=first_line):
                        part = parse_block(block, first, path, zero_based=zero_based)
                        if part.n_rows:
                            parts.append(part)
                except DataError as e:
                    # said by the client only if this copy is the client's file: hash the rest
                    while rng.read(ranges.READ_BYTES):
                        pass
                    return {"digest": digest.hexdigest(),
                            "error": [str(e.where), str(e.message), e.line]}
        except OSError as e:
            raise DataError(path, f"cannot read on a worker: {e.strerror or e}") from None
        summary = self._store(slot, parts, path, unlabeled, first_row)
        summary["digest"] = digest.hexdigest()  # of the bytes parsed: the client compares
        return summary

    def receive(self, slot: int, block: bytes, first_line: int, name: str,
                zero_based: bool) -> None:
        """Parse one piece of a file shipped from the client into block ``slot``'s parts."""
        from ssl_svm.formats.svmlight import parse_block

        part = parse_block(block, first_line, name, zero_based=zero_based)
        if part.n_rows:
            self.pieces.setdefault(slot, []).append(part)

    def receive_rows(self, slot: int, X, y, cost, name: str) -> None:
        """Rows shipped as arrays (CSR X, labels, cost factors) into block ``slot``'s parts."""
        import scipy.sparse as sp

        from ssl_svm.formats.svmlight import Dataset

        if not (sp.issparse(X) and isinstance(y, np.ndarray) and isinstance(cost, np.ndarray)
                and y.shape == cost.shape == (X.shape[0],)):
            raise channel.WireError("receive_rows: a CSR matrix and two vectors of its rows")
        self.pieces.setdefault(slot, []).append(
            Dataset(X, y.astype(np.float64), cost.astype(np.float64),
                    np.zeros(X.shape[0], np.int64), name))

    def finish(self, slot: int, name: str, unlabeled: bool, first_row: int = 0) -> dict:
        """Block ``slot`` from the pieces received; returns its summary."""
        return self._store(slot, self.pieces.pop(slot, []), name, unlabeled, first_row)

    def _store(self, slot, parts, name, unlabeled, first_row) -> dict:
        import scipy.sparse as sp

        if parts:
            X, y, cost, lines = ranges.merge_parts(parts)
        else:
            X, y, cost, lines = (sp.csr_matrix((0, 0)), np.zeros(0), np.ones(0),
                                 np.zeros(0, np.int64))
        if unlabeled:
            y = np.zeros(y.size)
        while len(self.slots) <= slot:
            self.slots.append(None)
        self.slots[slot] = resolve(self.kind.block)(X, y, cost, first_row, self.threads)
        self.slots[slot].lines = lines
        s = self.slots[slot].summary()
        s["costs"] = bool(np.any(cost != 1.0))
        return s

    def call(self, slots, method: str, args: tuple) -> list:
        """``method(*args)`` on each block in ``slots``, results in that order."""
        return [getattr(self.slots[s], method)(*args) for s in slots]

    def call_each(self, slots, method: str, args: list) -> list:
        """``method(*args[i])`` on block ``slots[i]``, results in that order."""
        return [getattr(self.slots[s], method)(*a) for s, a in zip(slots, args)]

    # -- the hosts' own links: the graph stage's halo goes from host to host, not through
    # the client (issue 65's projection: a relay through one process grows with the hosts)

    def peer_listen(self) -> tuple:
        """Open a listener for the other hosts of this fit, with a token of its own: (host,
        port, token, whether TLS). The client hands them to the other hosts over its
        authenticated channels (:meth:`peer_connect`)."""
        self._close_peers()
        self.peer_token = channel.new_token()
        host = self.where[0]
        self.peer_listener = socket.create_server(
            (host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        return (host, self.peer_listener.getsockname()[1], self.peer_token,
                self.tls is not None)

    def peer_connect(self, me: int, listing: list, layout: list) -> int:
        """Link this host (number ``me``) to every other host of ``listing`` (each one's
        :meth:`peer_listen`): it connects to the hosts numbered below it, authenticating with
        their tokens, then accepts those numbered above it on its listener (strangers are
        refused as the client's channel refuses them); ``layout``: block b's (host, slot).
        Returns the links."""
        self.me = int(me)
        self.layout = [(int(h), int(s)) for h, s in layout]
        hosts = len(listing)
        for j in range(self.me):
            host, port, token, tls = listing[j]
            sock = None
            try:
                sock = socket.create_connection((host, int(port)), timeout=CALL_SECONDS)
                if tls:
                    if self.peer_tls is None:
                        raise DataError(self.name, "another worker's block host serves TLS "
                                        "and this worker has no TLS certificate to connect")
                    sock = self.peer_tls.wrap_socket(sock)
                channel.client_handshake(sock, bytes(token))
                sock.settimeout(None)
                channel.configure_socket(sock)
                channel.send(sock, ("peer", self.me))
            except (OSError, channel.AuthenticationError) as e:
                if sock is not None:
                    sock.close()
                raise WorkerLost(self.name, f"cannot reach the block host of another worker "
                                 f"({type(e).__name__}: {e})") from None
            self.peer_socks[j] = sock
        want = hosts - 1 - self.me
        if want:
            conns = self._accept(self.peer_listener, self.peer_token, want, CALL_SECONDS)
            for c in conns:
                channel.configure_socket(c)
                msg = channel.recv(c)
                if not (isinstance(msg, tuple) and len(msg) == 2 and msg[0] == "peer"
                        and isinstance(msg[1], int) and self.me < msg[1] < hosts
                        and msg[1] not in self.peer_socks):
                    c.close()
                    raise channel.WireError("a block host sent no peer number")
                self.peer_socks[msg[1]] = c
            if len(conns) < want:
                raise WorkerLost(self.name, "another worker's block host did not connect")
        elif self.peer_listener is not None:
            self.peer_listener.close()
        self.peer_listener = None
        return len(self.peer_socks)

    def exchange_then(self, slots, name: str, method, args: list):
        """The halo values of vector ``name``: each of this host's blocks (``slots``) makes
        its :meth:`GraphBlock.halo_send`, the parts for blocks on other hosts go to those
        hosts directly, the parts from them come in, and each block takes its halo in block
        order; then ``method(*args[i])`` on block ``slots[i]`` (None: nothing). Pairs of
        hosts exchange in the order of their numbers (the lower sends first): no cycle of
        waits, and each link carries one message each way."""
        gid = {s: b for b, (h, s) in enumerate(self.layout) if h == self.me}
        B = len(self.layout)
        got: dict = {}
        out: dict[int, list] = {j: [] for j in self.peer_socks}
        for s in slots:
            b = gid[s]
            for o, part in enumerate(self.slots[s].halo_send(name)):
                if len(part):
                    h = self.layout[o][0]
                    if h == self.me:
                        got[(b, o)] = part
                    else:
                        out[h].append((b, o, part))
        for j in sorted(self.peer_socks):
            sock = self.peer_socks[j]
            mine = ("halo", name, out[j])
            try:
                if self.me < j:
                    channel.send(sock, mine)
                    msg = channel.recv(sock)
                else:
                    msg = channel.recv(sock)
                    channel.send(sock, mine)
            except (OSError, channel.WireError) as e:
                raise WorkerLost(self.name, "lost the link to another worker's block host "
                                 f"({type(e).__name__}: {str(e) or 'no detail'})") from None
            if not (isinstance(msg, tuple) and len(msg) == 3 and msg[0] == "halo"
                    and msg[1] == name and isinstance(msg[2], list)):
                raise channel.WireError("not a halo message")
            for item in msg[2]:
                if not (isinstance(item, tuple) and len(item) == 3
                        and isinstance(item[0], int) and isinstance(item[1], int)
                        and 0 <= item[0] < B and 0 <= item[1] < B
                        and self.layout[item[0]][0] == j and self.layout[item[1]][0] == self.me
                        and isinstance(item[2], np.ndarray)):
                    raise channel.WireError("not a halo part")
                got[(item[0], item[1])] = item[2]
        empty = np.zeros(0)
        for s in slots:
            o = gid[s]
            self.slots[s].halo_take(name, [got.get((b, o), empty) for b in range(B)])
        return None if method is None else self.call_each(slots, method, args)

    def _close_peers(self) -> None:
        for sock in self.peer_socks.values():
            try:
                sock.close()
            except OSError:
                pass
        self.peer_socks = {}
        if self.peer_listener is not None:
            self.peer_listener.close()
            self.peer_listener = None

    def echo(self, x):
        """x back (bench/bench_cluster.py times the connection's round trip with it)."""
        return x

    def memory(self) -> tuple[int, int]:
        """This process's resident memory now and its peak so far (bytes)."""
        import resource

        import psutil

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return int(psutil.Process().memory_info().rss), int(peak)


# --------------------------------------------------------------------------- here

class ClusterBlocks:
    """The blocks of a cluster fit, as :mod:`solvers.distributed` calls them: ``call`` runs a
    method on every block (in row order; each host its blocks in one request)."""

    def __init__(self, actors, addresses, security=None):
        """Connect to each host (``actors``, on the workers ``addresses``) and authenticate
        (:func:`channel.client_handshake`); TLS with ``security``'s client certificate when
        the host serves TLS, and an error when the client requires encryption and a host does
        not offer it."""
        self.actors = actors  # kept: the hosts live as long as their actor futures
        self.addresses = addresses
        self.layout: list[tuple[int, int]] = []  # block b -> (host, slot)
        self.d = 0
        self.calls = 0
        self.socks = []
        ctx = channel.tls_context(security, "client")
        required = bool(getattr(security, "require_encryption", False))
        try:
            for a, addr in zip(actors, addresses):
                try:
                    host, port, token, tls = a.channel().result(timeout=CALL_SECONDS)
                except Exception as e:  # TimeoutError, or Dask's error for a closed comm
                    raise WorkerLost(addr, "the Dask worker did not answer "
                                     f"({type(e).__name__}: {str(e) or 'no detail'})") from None
                if not tls and required:
                    raise DataError(addr, "the worker's block host serves no TLS, and this "
                                    "client requires encryption: give the workers TLS "
                                    "certificates (distributed.comm.tls)")
                if tls and ctx is None:
                    raise DataError(addr, "the worker's block host serves TLS only: give this "
                                    "client the cluster's TLS certificates (distributed.comm.tls)")
                self.socks.append(self._connect(addr, host, port, token, ctx if tls else None))
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _connect(addr, host, port, token, ctx):
        sock = None
        try:
            sock = socket.create_connection((host, port), timeout=CALL_SECONDS)
            if ctx is not None:
                sock = ctx.wrap_socket(sock)
            channel.client_handshake(sock, token)
            sock.settimeout(None)
            channel.configure_socket(sock)
            return sock
        except (OSError, channel.AuthenticationError) as e:
            if sock is not None:
                sock.close()
            at = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise DataError(addr, f"cannot connect to the worker's block host at "
                            f"{at}: {e.strerror or e if isinstance(e, OSError) else e}"
                            ) from None

    def _lost(self, h, e):
        return WorkerLost(self.addresses[h], f"the Dask worker was lost during the fit "
                          f"({type(e).__name__}: {str(e) or 'no detail'})")

    def request(self, pairs) -> list:
        """Send (host, method, args) requests, all before any answer, then collect the
        answers in order; a host's exception is raised here, a lost host is a DataError
        naming its worker."""
        for h, method, args in pairs:
            try:
                channel.send(self.socks[h], ("req", method, tuple(args)))
            except OSError as e:
                raise self._lost(h, e) from None
        out = []
        err = None
        for h, _, _ in pairs:
            while True:
                try:
                    msg = channel.recv(self.socks[h])
                except (OSError, channel.WireError) as e:
                    raise self._lost(h, e) from None
                if not isinstance(msg, tuple) or not msg:
                    raise self._lost(h, channel.WireError("not an answer"))
                if msg[0] != "log":
                    break
                logging.getLogger(str(msg[2])).log(int(msg[1]), "%s", msg[3])
            if msg[0] == "error" and err is None:
                err = msg[1:]
            out.append(msg[1] if msg[0] == "ok" else None)
        if err is not None:
            raise_reply(*err)
        return out

    def call(self, method, *args):
        self.calls += 1
        by_host: dict[int, list] = {}
        for h, s in self.layout:
            by_host.setdefault(h, []).append(s)
        res = self.request([(h, "call", (slots, method, args)) for h, slots in by_host.items()])
        return self._in_block_order(by_host, res)

    def _in_block_order(self, by_host: dict, res: list) -> list:
        """The hosts' answers (``res``, one list per host of ``by_host``) in block order."""
        per = dict(zip(by_host, res))
        out = []
        taken = dict.fromkeys(by_host, 0)
        for h, _ in self.layout:
            out.append(per[h][taken[h]])
            taken[h] += 1
        return out

    def call_each(self, method, args: list) -> list:
        """``method(*args[b])`` on every block b (each host its blocks in one request),
        results in block order."""
        self.calls += 1
        by_host: dict[int, list] = {}
        for b, (h, s) in enumerate(self.layout):
            by_host.setdefault(h, []).append((s, tuple(args[b])))
        res = self.request([(h, "call_each", ([s for s, _ in sa], method, [a for _, a in sa]))
                            for h, sa in by_host.items()])
        return self._in_block_order(by_host, res)

    def call_one(self, b, method, *args):
        self.calls += 1
        h, s = self.layout[b]
        return self.request([(h, "call", ([s], method, args))])[0][0]

    def connect_peers(self) -> None:
        """Link the hosts to each other (:meth:`BlockHost.peer_connect`), for
        :meth:`exchange_then`: each opens a listener, and each learns the others' over its
        authenticated channel to this process."""
        hosts = range(len(self.socks))
        listing = self.request([(h, "peer_listen", ()) for h in hosts])
        self.request([(h, "peer_connect", (h, listing, self.layout)) for h in hosts])

    def exchange_then(self, name: str, method: str | None = None, args: list | None = None):
        """:meth:`ssl_svm.solvers.distributed.LocalBlocks.exchange_then` over the hosts (after
        :meth:`connect_peers`): each host sends its blocks' halo values of vector ``name`` to
        the hosts that need them itself (:meth:`BlockHost.exchange_then`)."""
        self.calls += 1
        by_host: dict[int, list] = {}
        for b, (h, s) in enumerate(self.layout):
            by_host.setdefault(h, []).append((s, tuple(args[b]) if args is not None else ()))
        res = self.request([(h, "exchange_then", ([s for s, _ in sa], name, method,
                                                  [a for _, a in sa]))
                            for h, sa in by_host.items()])
        return None if method is None else self._in_block_order(by_host, res)

    def memory(self) -> list[int]:
        """Each worker's resident memory now (bytes)."""
        return self.request([(h, "memory", ()) for h in range(len(self.socks))])

    def close(self) -> None:
        """Leave every host: each answers once it has put its worker's environment and thread
        setting back (within :data:`BYE_SECONDS`), so they are back when the fit returns."""
        for sock in self.socks:
            try:
                sock.settimeout(BYE_SECONDS)
                channel.send(sock, ("req", "bye", ()))
                while True:
                    msg = channel.recv(sock)
                    if not (isinstance(msg, tuple) and msg and msg[0] == "log"):
                        break
            except (OSError, channel.WireError):
                pass  # a host already gone has nothing to put back
            finally:
                try:
                    sock.close()
                except OSError:
                    pass


def _listed(client) -> dict:
    """The scheduler's workers now (address -> info); a DataError when the scheduler is gone
    (its client cache then holds no list)."""
    try:
        info = client.scheduler_info()
    except Exception as e:  # OSError, a closed comm, a timeout
        info = {"error": e}
    if client.status != "running" or "workers" not in info:
        detail = f" ({type(info['error']).__name__})" if "error" in info else ""
        raise SchedulerLost(getattr(client.scheduler, "address", "scheduler"),
                            f"the connection to the Dask scheduler is lost{detail}")
    return info["workers"]


def _workers(client, lost=frozenset(), wait: float = 0.0) -> list[tuple[str, int]]:
    """(address, threads) of the scheduler's workers, those in ``lost`` left out (the
    scheduler may list a dead worker for a while); waits up to ``wait`` seconds for one."""
    deadline = time.monotonic() + wait
    while True:
        info = _listed(client)
        live = sorted((addr, int(w.get("nthreads", 1))) for addr, w in info.items()
                      if addr not in lost)
        if live or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if not live:
        raise DataError(client.scheduler.address, "the Dask cluster has no workers" +
                        (f" left ({', '.join(sorted(lost))} lost)" if lost else ""))
    return live


def _hosts(client, futs, addresses) -> list:
    """The block hosts of ``futs`` (one per worker in ``addresses``). A worker that leaves the
    scheduler's list before it has created its host, fails to, or has not within
    :data:`CALL_SECONDS` (dead, yet still listed) is :class:`WorkerLost`: never a wait without
    end on a worker that is gone."""
    from distributed import wait

    deadline = time.monotonic() + CALL_SECONDS
    while True:
        for f, addr in zip(futs, addresses):
            if f.status not in ("pending", "finished"):
                try:
                    f.result(timeout=1)
                    detail = f.status
                except Exception as e:  # KilledWorker, a closed comm, the host's own error
                    detail = f"{type(e).__name__}: {str(e) or 'no detail'}"
                raise WorkerLost(addr, f"the Dask worker did not start the fit's block host "
                                 f"({detail})")
        if all(f.status == "finished" for f in futs):
            return [f.result() for f in futs]
        listed = _listed(client)
        for f, addr in zip(futs, addresses):
            if f.status == "pending" and addr not in listed:
                raise WorkerLost(addr, "the Dask worker left the cluster before the fit began")
        if time.monotonic() >= deadline:
            addr = next(a for f, a in zip(futs, addresses) if f.status == "pending")
            raise WorkerLost(addr, f"the Dask worker did not start the fit's block host within "
                             f"{CALL_SECONDS:g} s")
        try:
            wait(futs, timeout=0.5)
        except TimeoutError:
            pass


def client_of(cluster) -> tuple:
    """(a dask.distributed Client, whether it is this call's to close) for ``cluster``: a
    Client as it is, or a scheduler address ('tcp://HOST:8786') connected to within 20 s."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("cluster= needs Dask: pip install 'dask[distributed]'") from None
    if isinstance(cluster, Client):
        return cluster, False
    if not isinstance(cluster, str):
        raise TypeError(f"cluster must be a scheduler address or a distributed.Client, not "
                        f"{type(cluster).__name__}")
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*://[^\s/]+|[^\s:/]+:\d+", cluster):
        # (an empty address would have Client start a cluster of its own here)
        raise ValueError(f"cluster must be a Dask scheduler's address such as "
                         f"'tcp://HOST:8786' (got {cluster!r})")
    try:
        return Client(cluster, timeout="20s"), True
    except Exception as e:  # OSError, a timeout, Dask's own for a bad address
        raise DataError(cluster, f"cannot connect to the Dask scheduler: "
                        f"{type(e).__name__}: {str(e) or 'no detail'}") from None


def _open(client, lost, kind: str) -> ClusterBlocks:
    """One block host of type ``kind`` on each of the cluster's workers not in ``lost``,
    connected (no blocks yet)."""
    workers = _workers(client, lost, WORKER_WAIT if lost else 0.0)
    futs = [client.submit(BlockHost, nthreads, kind, actor=True, workers=[addr],
                          allow_other_workers=False, pure=False) for addr, nthreads in workers]
    addresses = [a for a, _ in workers]
    blocks = ClusterBlocks(_hosts(client, futs, addresses), addresses, client.security)
    blocks.futures = futs
    return blocks


# rows of an array shipped to a host in one message (load_rows)
PIECE_BYTES = 64 << 20


def load_rows(client, X, y, cost, name: str = "X", lost=frozenset(),
              kind: str = "linear") -> ClusterBlocks:
    """Rows held here (X CSR, labels y in internal codes with 0 = unlabeled, cost factors)
    onto the cluster's workers (those not in ``lost``) as blocks of type ``kind``: one part
    of consecutive rows per worker, shipped in pieces of about :data:`PIECE_BYTES`. Returns
    the blocks, with ``summaries`` attached, as :func:`load`."""
    blocks = _open(client, lost, kind)
    W = len(blocks.addresses)
    n = X.shape[0]
    per_row = 12.0 * X.nnz / max(n, 1) + 24.0
    piece = max(1, int(PIECE_BYTES // per_row))
    cuts = [n * k // W for k in range(W + 1)]
    for h in range(W):
        for a in range(cuts[h], cuts[h + 1], piece):
            e = min(cuts[h + 1], a + piece)
            blocks.request([(h, "receive_rows", (0, X[a:e], y[a:e], cost[a:e], name))])
        blocks.layout.append((h, 0))
    blocks.summaries = blocks.request([(h, "finish", (0, name, False, cuts[h]))
                                       for h in range(W)])
    for h, s in enumerate(blocks.summaries):
        s["first_row"] = cuts[h]
    return blocks


def load(client, files: list[tuple[str, bool]], zero_based: bool, say=log.info,
         lost=frozenset(), kind: str = "linear") -> ClusterBlocks:
    """Read ``files`` [(path, all rows unlabeled)] onto the cluster's workers (those not in
    ``lost``) as blocks of type ``kind`` (:data:`BLOCK_TYPES`): one host per worker, each file
    cut into one part per worker. Returns the blocks, with ``summaries`` (per block)
    attached."""
    from ssl_svm.solvers.host.pools import available_cpus

    blocks = _open(client, lost, kind)
    addresses = blocks.addresses
    W = len(addresses)
    summaries = []
    slot_of = [0] * W
    first_row = 0
    for path, unl in files:
        facts = ranges.file_facts(path)
        here_plain, size = facts[:2]
        seen = client.run(ranges.file_facts, os.path.abspath(path), workers=addresses)
        shared = here_plain and all(tuple(v) == facts for v in seen.values())
        if here_plain and not shared:
            other = sorted(w for w, v in seen.items() if v[1] >= 0 and tuple(v) != facts)
            if other:
                log.warning("%s: the file at this path on %s differs from this one (size or "
                            "sampled content): it is read here and shipped", path,
                            ", ".join(other))
        t0 = time.perf_counter()
        if shared:
            full = os.path.abspath(path)
            cut = ranges.cut_ranges(path, W, available_cpus())
            first = 1
            reqs = []
            starts = []
            for h, (a, b, n, _) in enumerate(cut):
                reqs.append((h, "read_range", (slot_of[h], full, a, b, first, zero_based, unl)))
                starts.append(first)
                first += n
            parts = blocks.request(reqs)
            for h, (a, b, _, digest) in enumerate(cut):
                error = parts[h].pop("error", None)
                same = parts[h].pop("digest", None) == digest
                if same and error is not None:
                    raise DataError(*error)  # the client's own file has the bad line
                if not same:
                    log.warning("%s: the copy at this path on %s differs from this one in "
                                "bytes %d-%d (a stale copy?): that part is read here and "
                                "shipped", path, addresses[h], a, b)
                    parts[h] = _ship_range(blocks, h, slot_of[h], path, a, b, starts[h],
                                           zero_based, unl)
                blocks.layout.append((h, slot_of[h]))
                slot_of[h] += 1
            how = "each worker read its own part"
        else:
            parts = _ship(blocks, path, size, zero_based, unl, slot_of)
            how = "read here and shipped in pieces"
        for s in parts:
            s["first_row"] = first_row
            first_row += s["rows"]
        summaries += parts
        rows = sum(s["rows"] for s in parts)
        if rows == 0:
            raise DataError(path, "no data rows (the file is empty or has only comments)")
        say("read %s on %d workers (%s): %d rows, %d stored values (%.2f s)", path, W, how,
            rows, sum(s["nnz"] for s in parts), time.perf_counter() - t0)
    blocks.summaries = summaries
    return blocks


def _ship_range(blocks, h, slot, path, start, end, first_line, zero_based, unl) -> dict:
    """Read bytes [start, end) of ``path`` here and send them, piece by piece, to host ``h``'s
    block ``slot`` (replacing what it read of its own copy); returns the block's summary."""
    from ssl_svm.formats.svmlight import iter_line_blocks

    with open(path, "rb") as f:
        for block, first in iter_line_blocks(ranges.open_range(f, start, end), path,
                                             first_line=first_line):
            blocks.request([(h, "receive", (slot, block, first, path, zero_based))])
    return blocks.request([(h, "finish", (slot, path, unl))])[0]


def _ship(blocks, path, size, zero_based, unl, slot_of) -> list[dict]:
    """Read ``path`` here and send each piece to the host whose share of the file (by bytes
    read) it falls in; one piece in flight at a time."""
    from ssl_svm.formats.svmlight import iter_line_blocks, open_input

    W = len(blocks.socks)
    stream = open_input(path)
    raw = getattr(stream, "fileobj", None) or getattr(stream, "_fp", None) or stream
    try:
        for block, first in iter_line_blocks(stream, path):
            try:
                at = raw.tell()
            except (OSError, AttributeError, ValueError):
                at = 0
            h = min(W - 1, at * W // max(size, 1)) if size > 0 else 0
            blocks.request([(h, "receive", (slot_of[h], block, first, path, zero_based))])
    finally:
        stream.close()
    reqs = []
    for k in range(W):
        reqs.append((k, "finish", (slot_of[k], path, unl)))
        blocks.layout.append((k, slot_of[k]))
        slot_of[k] += 1
    return blocks.request(reqs)


def run(client, files: list[tuple[str, bool]], zero_based: bool, work, say=log.info,
        kind: str = "linear"):
    """``work(blocks)`` on ``files`` read onto the cluster (:func:`load`, blocks of type
    ``kind``), started over on the
    workers left (the lost worker's rows read again there) when a worker is lost, at most
    :data:`RESTARTS` times, each said as a warning. A fit is deterministic given the blocks,
    so the result is the one a run on those workers alone gives: never a mix of two layouts.
    Returns ``work``'s result; the blocks are released either way. A lost worker beyond the
    restarts, or with none left, is the :class:`WorkerLost` (a one-line error)."""
    return run_on(client, lambda lost: load(client, files, zero_based, say, lost, kind), work)


def run_on(client, loader, work):
    """:func:`run` with the rows put on the workers by ``loader(lost)`` (a function of the
    lost workers' addresses returning the blocks: :func:`load`, :func:`load_rows`)."""
    lost: set[str] = set()
    for attempt in range(RESTARTS + 1):
        blocks = None
        try:
            blocks = loader(frozenset(lost))
            return work(blocks)
        except WorkerLost as e:
            lost.add(e.where)
            if attempt == RESTARTS:
                raise WorkerLost(e.where, f"{e.message}; the fit was started over "
                                 f"{RESTARTS} times after losing workers: giving up") from None
            try:
                left = len(_workers(client, frozenset(lost), WORKER_WAIT))
            except SchedulerLost as gone:
                raise WorkerLost(e.where, f"{e.message}, and {gone.message}: nothing can read "
                                 "its rows again") from None
            except DataError:
                raise WorkerLost(e.where, f"{e.message}, and no worker is left to read its "
                                 "rows again") from None
            log.warning("%s: %s; its rows are read again on the %d worker%s left and the fit "
                        "starts over (restart %d of at most %d)", e.where, e.message, left,
                        "" if left == 1 else "s", attempt + 1, RESTARTS)
        finally:
            if blocks is not None:
                blocks.close()
