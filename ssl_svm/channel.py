"""The block hosts' channel: a peer is authenticated before any byte it sends is interpreted,
and what it sends then is decoded into plain values (never code: no pickle on the wire).

Handshake, on a new connection (fixed lengths: nothing is parsed before it succeeds)::

    client -> host     ticket: HMAC-SHA256(token, "ticket"), its first 16 bytes, at once
    host   -> client   MAGIC (8 bytes) + n_h (32 random bytes)
    client -> host     n_c (32 random bytes) + HMAC-SHA256(token, "client" + n_h + n_c)
    host   -> client   HMAC-SHA256(token, "host" + n_h + n_c)

The ticket only reserves the connection a place among the host's pending handshakes (a flood
of strangers' connections evicts the oldest of theirs, never a ticketed one, however slow its
answer): it proves nothing, as the MAC that follows does, and a wrong one closes the
connection at once.

The 32-byte ``token`` is drawn by the host and reaches the client through Dask (the actor
call that creates the host, on Dask's own comm and its security settings); it never travels on
this connection, and a recorded answer does not open another connection (n_h is new each time).
Each side compares with :func:`hmac.compare_digest`. With TLS (:func:`tls_context`: the
cluster's own certificates) the handshake runs inside the TLS session.

Messages after it: an 8-byte little-endian length (at most :data:`MAX_FRAME`, checked before
anything is allocated), then one value in a small typed format (:func:`encode`): None, bool,
int64, float, str, bytes, tuple, list, dict, numpy scalars and arrays of plain numeric dtypes
(dtype, shape, raw bytes), CSR matrices, and the linear :class:`~ssl_svm.solvers.models.Model`
a fit returns. Anything else is refused on either side (:class:`WireError`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import ssl
import struct

import numpy as np

MAGIC = b"SSLBH\x00\x02\x00"  # protocol name and version
NONCE = 32
TICKET = 16
TOKEN = 32
DIGEST = 32
# The largest frame accepted: well above any d-vector, weight matrix or piece of a file a fit
# sends (pieces are a few MiB), so a larger length is a broken or hostile peer, refused before
# any allocation.
MAX_FRAME = 1 << 34
MAX_DEPTH = 32  # nesting of containers in one value
HANDSHAKE_SECONDS = 10.0  # an unauthenticated connection is closed after this long

_LEN = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
# the dtypes an array may have on the wire (little-endian or single-byte)
DTYPES = frozenset({"|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8"})
ALIGN = 16  # array data starts at a multiple of this in a frame: numba takes it as it is
_SMALL = 1 << 12  # array data up to this size is copied into the frame, larger is sent in place


class WireError(ValueError):
    """A message that is not a value of the channel's format (or a value that has none)."""


class AuthenticationError(ConnectionError):
    """The peer did not prove that it holds the token."""


def new_token() -> bytes:
    return secrets.token_bytes(TOKEN)


def _mac(token: bytes, who: bytes, n_h: bytes, n_c: bytes) -> bytes:
    return hmac.new(token, who + n_h + n_c, hashlib.sha256).digest()


# recv_exact's first allocation: beyond it the buffer doubles as the bytes arrive, so a
# declared length is never allocated before the peer has sent about half of it
FIRST_BYTES = 1 << 20


def recv_exact(sock, n: int) -> bytearray:
    """Exactly ``n`` bytes from ``sock`` (ConnectionResetError if it closes first). The buffer
    grows with what arrives (:data:`FIRST_BYTES`, then doubling), never to ``n`` up front."""
    buf = bytearray(min(n, FIRST_BYTES))
    got = 0
    while got < n:
        if got == len(buf):
            buf.extend(bytes(min(n, 2 * len(buf)) - len(buf)))
        with memoryview(buf) as view:
            k = sock.recv_into(view[got:], len(buf) - got)
        if k == 0:
            raise ConnectionResetError("connection closed")
        got += k
    return buf


def ticket(token: bytes) -> bytes:
    """The client's first bytes on a connection to the host of ``token``."""
    return hmac.new(token, b"ticket", hashlib.sha256).digest()[:TICKET]


def client_handshake(sock, token: bytes) -> None:
    """The client's side of the handshake on a connected (blocking) socket;
    :class:`AuthenticationError` unless the host proves it holds ``token``."""
    sock.sendall(ticket(token))
    hello = bytes(recv_exact(sock, len(MAGIC) + NONCE))
    if hello[:len(MAGIC)] != MAGIC:
        raise AuthenticationError("the peer does not speak this protocol (version)")
    n_h = hello[len(MAGIC):]
    n_c = secrets.token_bytes(NONCE)
    sock.sendall(n_c + _mac(token, b"client", n_h, n_c))
    proof = bytes(recv_exact(sock, DIGEST))
    if not hmac.compare_digest(proof, _mac(token, b"host", n_h, n_c)):
        raise AuthenticationError("the peer does not hold the block host's token")


class ServerHandshake:
    """The host's side of the handshake on one accepted connection, as a state machine for a
    non-blocking socket (one thread serves every pending connection: an idle stranger holds
    no thread and never delays the client). Call :meth:`step` when the socket is ready;
    it returns True once the peer has proven the token."""

    def __init__(self, sock, token: bytes, deadline: float):
        self.sock = sock
        self.token = token
        self.deadline = deadline
        self.n_h = secrets.token_bytes(NONCE)
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.out = MAGIC + self.n_h
        self.inbuf = b""
        self.wants_write = True
        self.ticketed = False  # the peer sent the right ticket: kept among the pending

    def step(self) -> bool:
        """Advance as far as the socket allows; ConnectionError/ssl.SSLError on failure."""
        if self.tls:  # the TLS handshake first (it may need several reads and writes)
            try:
                self.sock.do_handshake()
                self.tls = False
            except ssl.SSLWantReadError:
                self.wants_write = False
                return False
            except ssl.SSLWantWriteError:
                self.wants_write = True
                return False
        while self.out:
            try:
                k = self.sock.send(self.out)
            except (BlockingIOError, ssl.SSLWantWriteError):
                self.wants_write = True
                return False
            self.out = self.out[k:]
        self.wants_write = False
        want = TICKET + NONCE + DIGEST
        while len(self.inbuf) < want:
            try:
                piece = self.sock.recv(want - len(self.inbuf))
            except (BlockingIOError, ssl.SSLWantReadError):
                return False
            if not piece:
                raise ConnectionResetError("closed during the handshake")
            self.inbuf += piece
            if not self.ticketed and len(self.inbuf) >= TICKET:
                if not hmac.compare_digest(self.inbuf[:TICKET], ticket(self.token)):
                    raise AuthenticationError("a wrong ticket")
                self.ticketed = True
        n_c, mac = self.inbuf[TICKET:TICKET + NONCE], self.inbuf[TICKET + NONCE:]
        if not hmac.compare_digest(mac, _mac(self.token, b"client", self.n_h, n_c)):
            raise AuthenticationError("wrong answer to the challenge")
        self.proof = _mac(self.token, b"host", self.n_h, n_c)
        return True


def tls_context(security, side: str):
    """The SSLContext of ``side`` ("host": a worker's, to listen; "client": to connect;
    "peer": a worker's, to connect to another worker) from a ``distributed.Security``, or
    None when it has no TLS certificate for that role (the cluster runs without TLS)."""
    if security is None:
        return None
    try:
        if side == "host":
            return security.get_listen_args("worker").get("ssl_context")
        if side == "peer":
            return security.get_connection_args("worker").get("ssl_context")
        return security.get_connection_args("client").get("ssl_context")
    except (AttributeError, KeyError):
        return None


# --------------------------------------------------------------------------- values

class _Encoder:
    def __init__(self):
        self.parts: list = []
        self.cur = bytearray()
        self.size = 0  # bytes of the body before ``cur``

    def raw(self, data) -> None:
        mv = memoryview(data).cast("B")
        if mv.nbytes <= _SMALL:
            self.cur += mv
        else:
            self.parts.append(self.cur)
            self.size += len(self.cur)
            self.parts.append(mv)
            self.size += mv.nbytes
            self.cur = bytearray()

    def pad(self) -> None:
        at = self.size + len(self.cur)
        self.cur += b"\0" * (-at % ALIGN)

    def value(self, x, depth=0) -> None:
        if depth > MAX_DEPTH:
            raise WireError("value nested too deep")
        f = _ENCODE.get(type(x))
        if f is not None:
            f(self, x, depth)
        elif isinstance(x, np.generic):
            self.array(np.asarray(x), b"g")
        elif isinstance(x, np.ndarray):
            self.array(x, b"a")
        elif isinstance(x, bool):
            self.cur += b"T" if x else b"F"
        elif isinstance(x, int):
            self.put_int(x, depth)
        elif isinstance(x, float):
            self.cur += b"f" + _F64.pack(x)
        elif isinstance(x, str):
            self.put_str(x, depth)
        elif isinstance(x, (bytes, bytearray, memoryview)):
            self.put_bytes(x, depth)
        elif isinstance(x, (tuple, list)):
            self.put_seq(x, depth)
        elif isinstance(x, dict):
            self.put_dict(x, depth)
        else:
            self.other(x, depth)

    def put_none(self, x, depth) -> None:
        self.cur += b"N"

    def put_bool(self, x, depth) -> None:
        self.cur += b"T" if x else b"F"

    def put_int(self, x, depth) -> None:
        try:
            self.cur += b"i" + _I64.pack(x)
        except struct.error:
            raise WireError(f"integer out of range: {x}") from None

    def put_float(self, x, depth) -> None:
        self.cur += b"f" + _F64.pack(x)

    def put_str(self, x, depth) -> None:
        b = x.encode("utf-8", "surrogatepass")
        self.cur += b"s" + _LEN.pack(len(b))
        self.raw(b)

    def put_bytes(self, x, depth) -> None:
        b = memoryview(x).cast("B")
        self.cur += b"b" + _LEN.pack(b.nbytes)
        self.raw(b)

    def put_seq(self, x, depth) -> None:
        self.cur += (b"t" if isinstance(x, tuple) else b"l") + _LEN.pack(len(x))
        for v in x:
            self.value(v, depth + 1)

    def put_dict(self, x, depth) -> None:
        self.cur += b"d" + _LEN.pack(len(x))
        for k, v in x.items():
            self.value(k, depth + 1)
            self.value(v, depth + 1)

    def put_ndarray(self, x, depth) -> None:
        self.array(x, b"a")

    def array(self, a: np.ndarray, t: bytes) -> None:
        dt = a.dtype
        name = _NAMES.get(dt)
        if name is None:
            dt = dt.newbyteorder("<") if dt.byteorder == ">" else dt
            if dt.str not in DTYPES:
                raise WireError(f"arrays of dtype {a.dtype} do not travel")
            name = dt.str.encode()
        if not a.flags.c_contiguous or a.dtype != dt:
            a = np.ascontiguousarray(a, dtype=dt)
        self.cur += t + bytes((len(name),)) + name + bytes((a.ndim,)) + b"".join(
            [_LEN.pack(s) for s in a.shape])
        self.pad()
        self.raw(a.reshape(-1).view(np.uint8) if a.size else b"")

    def other(self, x, depth) -> None:
        import scipy.sparse as sp

        from ssl_svm.solvers.models import LinearFunctions, Model

        if sp.issparse(x) and x.format == "csr":
            self.cur += b"C"
            self.value((tuple(int(s) for s in x.shape), x.data, x.indices, x.indptr), depth + 1)
        elif isinstance(x, Model) and isinstance(x.function, LinearFunctions):
            # what a fit driven on the host returns; warm starts and training values stay there
            self.cur += b"M"
            self.value({"algorithm": x.algorithm, "labels": list(x.labels),
                        "n_features": int(x.n_features), "W": x.function.W,
                        "b": x.function.b, "params": x.params, "stats": x.stats,
                        "probability": x.probability}, depth + 1)
        else:
            raise WireError(f"a {type(x).__name__} does not travel on the channel")

    def frame(self) -> list:
        """The buffers of the whole frame, length first."""
        body = self.parts + [self.cur]
        n = self.size + len(self.cur)
        return [_LEN.pack(n)] + [b for b in body if len(b)]


_ENCODE = {type(None): _Encoder.put_none, bool: _Encoder.put_bool, int: _Encoder.put_int,
           float: _Encoder.put_float, str: _Encoder.put_str, bytes: _Encoder.put_bytes,
           bytearray: _Encoder.put_bytes, memoryview: _Encoder.put_bytes, tuple: _Encoder.put_seq,
           list: _Encoder.put_seq, dict: _Encoder.put_dict, np.ndarray: _Encoder.put_ndarray}


def encode(obj) -> list:
    """The frame of ``obj`` as a list of buffers (large arrays are not copied)."""
    e = _Encoder()
    e.value(obj)
    return e.frame()


_DT = {name: np.dtype(name) for name in DTYPES}
_NAMES = {dt: name.encode() for name, dt in _DT.items()}


# what a decoded value may hold in Python objects, besides its frame: BUDGET_FACTOR times the
# frame's bytes plus BUDGET_BYTES, each item charged about its size (a frame of many tiny
# items would otherwise take ~19 times its own size)
BUDGET_FACTOR = 2
BUDGET_BYTES = 1 << 24
_ITEM = 64  # the charge of one decoded object (a Python int, a container, an array header)


class _Decoder:
    def __init__(self, buf):
        self.mv = memoryview(buf).cast("B")
        self.n = self.mv.nbytes
        self.at = 0
        self.budget = BUDGET_FACTOR * self.n + BUDGET_BYTES

    def charge(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise WireError("a message of more items than its size allows")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > self.n:
            raise WireError("message truncated")
        piece = self.mv[self.at:self.at + n]
        self.at += n
        return piece

    def unpack(self, st: struct.Struct):
        if self.at + st.size > self.n:
            raise WireError("message truncated")
        (v,) = st.unpack_from(self.mv, self.at)
        self.at += st.size
        return v

    def count(self) -> int:
        n = self.unpack(_LEN)
        if n > self.n - self.at:  # every item takes at least one byte
            raise WireError("count larger than the message")
        return n

    def value(self, depth=0):
        if depth > MAX_DEPTH:
            raise WireError("value nested too deep")
        if self.at >= self.n:
            raise WireError("message truncated")
        t = self.mv[self.at]
        self.at += 1
        self.charge(8 if t in (0x4E, 0x54, 0x46) else 2 * _ITEM if t in (0x74, 0x6C, 0x64)
                    else _ITEM)
        if t == 0x4E:  # N
            return None
        if t == 0x54:  # T
            return True
        if t == 0x46:  # F
            return False
        if t == 0x69:  # i
            return self.unpack(_I64)
        if t == 0x66:  # f
            return self.unpack(_F64)
        if t == 0x73:  # s
            try:
                piece = self.take(self.count())
                self.charge(4 * piece.nbytes)
                return str(piece, "utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise WireError("a string that is not UTF-8") from None
        if t == 0x62:  # b
            piece = self.take(self.count())
            self.charge(piece.nbytes)
            return bytes(piece)
        if t == 0x74 or t == 0x6C:  # t, l
            items = [self.value(depth + 1) for _ in range(self.count())]
            return tuple(items) if t == 0x74 else items
        if t == 0x64:  # d
            out = {}
            for _ in range(self.count()):
                k = self.value(depth + 1)
                try:
                    out[k] = self.value(depth + 1)
                except TypeError:
                    raise WireError("a dictionary key that cannot be one") from None
            return out
        if t == 0x61:  # a
            return self.array()
        if t == 0x67:  # g
            a = self.array()
            if a.ndim != 0:
                raise WireError("a scalar with a shape")
            return a[()]
        if t == 0x43:  # C
            return self.csr(depth)
        if t == 0x4D:  # M
            return self.model(depth)
        raise WireError(f"unknown tag {t}")

    def array(self) -> np.ndarray:
        k = self.mv[self.at] if self.at < self.n else 0
        self.at += 1
        dt = _DT.get(bytes(self.take(k)).decode("ascii", "replace"))
        if dt is None:
            raise WireError("an array of a dtype that is not accepted")
        ndim = self.take(1)[0]
        if ndim > 8:
            raise WireError("too many dimensions")
        shape = tuple(self.unpack(_LEN) for _ in range(ndim))
        self.at += -self.at % ALIGN
        n = dt.itemsize
        for s in shape:
            n *= s
            if n > self.n:
                raise WireError("array larger than the message")
        a = np.frombuffer(self.take(n), dtype=dt)
        if ndim != 1:
            try:  # (0, 2**62) holds no byte, yet is no array
                a = a.reshape(shape)
            except (ValueError, OverflowError) as e:
                raise WireError(f"an array of shape {shape}: {e}") from None
        if a.flags.aligned:
            return a
        self.charge(n)
        return a.copy()

    def csr(self, depth):
        import scipy.sparse as sp

        parts = self.value(depth + 1)
        try:
            shape, data, indices, indptr = parts
            m = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
            m.check_format(full_check=True)
        except (TypeError, ValueError) as e:
            raise WireError(f"not a CSR matrix: {e}") from None
        return m

    def model(self, depth):
        from ssl_svm.solvers.models import LinearFunctions, Model
        from ssl_svm.solvers.registry import ALGORITHMS

        f = self.value(depth + 1)
        try:
            W, b = np.asarray(f["W"], dtype=np.float64), np.asarray(f["b"], dtype=np.float64)
            if W.ndim != 2 or b.ndim != 1 or W.shape[1] != b.size or b.size == 0:
                raise ValueError("weight shapes")
            algo = ALGORITHMS.get(f["algorithm"]) if isinstance(f["algorithm"], str) else None
            if algo is None or not algo.linear_model:
                raise ValueError(f"no linear solver {f['algorithm']!r}")
            labels, d = f["labels"], f["n_features"]
            if not isinstance(labels, list) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in labels) or \
                    len(set(labels)) != len(labels) or len(labels) != max(2, b.size):
                raise ValueError(f"labels {labels!r} for {b.size} functions")
            if not isinstance(d, int) or isinstance(d, bool) or d != W.shape[0]:
                raise ValueError(f"n_features {d!r} for weights of {W.shape[0]} rows")
            if not isinstance(f["params"], dict) or not isinstance(f["stats"], dict):
                raise ValueError("params")
            p = f["probability"]
            if p is not None and not (isinstance(p, float) and np.isfinite(p)):
                raise ValueError(f"probability {p!r}")
            return Model(algorithm=algo.name, labels=labels, n_features=d,
                         function=LinearFunctions(W, b), params=f["params"], stats=f["stats"],
                         probability=p)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise WireError(f"not a model: {e}") from None


def decode(buf):
    """The value in a frame's body (:class:`WireError` if it is not exactly one value)."""
    d = _Decoder(buf)
    try:
        out = d.value()
    except WireError:
        raise
    except (ValueError, OverflowError, TypeError, IndexError, MemoryError) as e:
        # the decoder's one error type, whatever a hostile frame finds underneath
        raise WireError(f"not a value: {type(e).__name__}: {e}") from None
    if d.at != d.mv.nbytes:
        raise WireError("bytes after the value")
    return out


def send(sock, obj) -> None:
    """One message: ``obj`` encoded and framed (:class:`WireError` before sending anything if
    it has no encoding)."""
    bufs = encode(obj)
    if isinstance(sock, ssl.SSLSocket):  # no sendmsg on TLS: one write per buffer
        if sum(len(b) if isinstance(b, (bytes, bytearray)) else b.nbytes for b in bufs) < 1 << 16:
            sock.sendall(b"".join(bufs))
        else:
            for b in bufs:
                sock.sendall(b)
        return
    views = [memoryview(b).cast("B") for b in bufs]
    while views:
        k = sock.sendmsg(views[:512])  # one system call for the frame, as a rule
        while views and k >= views[0].nbytes:
            k -= views[0].nbytes
            views.pop(0)
        if k:
            views[0] = views[0][k:]


def recv(sock):
    """One message's value; a length above :data:`MAX_FRAME` is refused before allocating."""
    (n,) = _LEN.unpack(recv_exact(sock, _LEN.size))
    if n > MAX_FRAME:
        raise WireError(f"a message of {n} bytes (more than {MAX_FRAME})")
    return decode(recv_exact(sock, n))


def configure_socket(sock) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
