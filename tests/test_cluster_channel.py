"""The block hosts' channel as an attacker sees it (loopback only): nothing a peer sends is
interpreted before it proves it holds the token, no message is ever unpickled, strangers
neither stall nor change the client's work, and TLS applies when the cluster has it."""

import hashlib
import hmac
import os
import pickle
import socket
import struct
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ssl_svm import channel, cluster, transport
from ssl_svm.formats import ranges
from ssl_svm.formats.errors import DataError
from ssl_svm.solvers.errors import NonFiniteError, ProblemError
from ssl_svm.solvers.models import LinearFunctions, Model


class _Now:
    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


class _Actor:
    """A block host in this process, called as ClusterBlocks calls a Dask actor."""

    def __init__(self, host):
        self.host = host

    def channel(self):
        return _Now(self.host.channel())


def _client(host):
    return transport.ClusterBlocks([_Actor(host)], ["local"])


class _Marker:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _hello(sock):
    return channel.recv_exact(sock, len(channel.MAGIC) + channel.NONCE)


def _answer(token, hello, ticket=None):
    """The client's ticket (of ``ticket``, else of ``token``) and its answer to ``hello``."""
    n_h = bytes(hello[len(channel.MAGIC):])
    n_c = os.urandom(channel.NONCE)
    return (channel.ticket(ticket or token) + n_c +
            hmac.new(token, b"client" + n_h + n_c, hashlib.sha256).digest())


def _closed_by_host(sock, within=15.0) -> bool:
    """True once the host closes ``sock`` (reads end or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def _echo_works(host):
    blocks = _client(host)
    try:
        v = np.arange(5.0)
        np.testing.assert_array_equal(blocks.request([(0, "echo", (v,))])[0], v)
    finally:
        blocks.close()


# --------------------------------------------------------------------------- the format

VALUES = [None, True, False, 0, -2**63, 2**63 - 1, 1.5, float("inf"), "", "é\u2028x", b"\0x",
          (), [], {}, (1, [2.0, "a"], {"k": (None,)}), {1.0: 3, "x": b"y"},
          np.float64(2.5), np.int64(-3), np.bool_(True), np.zeros(0), np.arange(7, dtype=np.int32),
          np.arange(12.0).reshape(3, 4), np.ones((2, 3), np.float32)[:, ::2],
          np.arange(5000.0)]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_values_round_trip(value):
    frame = channel.encode(value)
    body = b"".join(bytes(b) for b in frame[1:])
    assert struct.unpack("<Q", frame[0])[0] == len(body)
    out = channel.decode(bytearray(body))
    if isinstance(value, np.ndarray):
        assert out.dtype == value.dtype and out.shape == value.shape
        np.testing.assert_array_equal(out, value)
        assert out.flags.aligned
    else:
        assert type(out) is type(value) and out == value


def test_csr_and_model_round_trip():
    X = sp.random(6, 9, density=0.4, format="csr", random_state=0)
    out = channel.decode(bytearray(b"".join(bytes(b) for b in channel.encode(X)[1:])))
    assert (out != X).nnz == 0 and out.shape == X.shape
    m = Model("tsvm", [1, -1], 4, LinearFunctions(np.arange(4.0).reshape(4, 1), np.array([.5])),
              params={"lambda": 0.001, "positive_fraction": None}, stats={"objective": [1.25]})
    out = channel.decode(bytearray(b"".join(bytes(b) for b in channel.encode(m)[1:])))
    np.testing.assert_array_equal(out.function.W, m.function.W)
    assert (out.algorithm, out.labels, out.params, out.stats) == (
        m.algorithm, m.labels, m.params, m.stats)


@pytest.mark.parametrize("value", [object(), {1, 2}, np.array([object()]), 2**64,
                                   np.array(["a"]), lambda: 0])
def test_what_has_no_encoding_is_refused(value):
    with pytest.raises(channel.WireError):
        channel.encode(value)


def test_a_pickle_is_not_a_message(tmp):
    marker = tmp / "ran"
    payload = pickle.dumps(_Marker(str(marker)))
    with pytest.raises(channel.WireError):
        channel.decode(bytearray(payload))
    assert not marker.exists()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_is_a_wire_error_and_nothing_else(data):
    try:
        channel.decode(bytearray(data))
    except channel.WireError:
        pass


@pytest.mark.parametrize("body", [
    b"l" + struct.pack("<Q", 2**62),  # a count larger than the message
    b"a\x03<f8\x01" + struct.pack("<Q", 2**61),  # an array larger than the message
    b"a\x03|O8\x01" + struct.pack("<Q", 1),  # object arrays
    b"t" * 10_000,  # nesting
    b"s" + struct.pack("<Q", 2) + b"\xff\xfe",  # not UTF-8
    b"NN",  # bytes after the value
])
def test_hostile_bodies_are_refused_before_allocating(body):
    with pytest.raises(channel.WireError):
        channel.decode(bytearray(body))


def _body(value) -> bytes:
    return b"".join(bytes(b) for b in channel.encode(value)[1:])


def _model_body(fields: dict) -> bytes:
    """A model frame's body with these fields, as the encoder lays one out."""
    e = channel._Encoder()
    e.cur += b"M"
    e.value(fields)
    return b"".join(bytes(b) for b in e.frame()[1:])


_MODEL = {"algorithm": "tsvm", "labels": [1, -1], "n_features": 4,
          "W": np.arange(4.0).reshape(4, 1), "b": np.array([0.5]),
          "params": {"lambda": 0.001}, "stats": {"objective": [1.0]}, "probability": None}


@pytest.mark.parametrize("change", [
    {"n_features": float("inf")}, {"n_features": -5}, {"n_features": 3}, {"n_features": True},
    {"labels": []}, {"labels": [1]}, {"labels": [1, 1]}, {"labels": [1.5, 2]},
    {"labels": "ab"}, {"algorithm": "nosuch"}, {"algorithm": "lapsvm"}, {"algorithm": 3},
    {"W": np.zeros((4, 0))}, {"b": np.zeros(0), "W": np.zeros((4, 0))},
    {"probability": float("nan")}, {"probability": "x"}, {"params": []},
])
def test_a_model_frame_with_nonsense_fields_is_a_wire_error(change):
    """Only an authenticated peer sends models; still, a model whose fields make no model is
    the decoder's one error (n_features = inf raised OverflowError; -5, [] labels and an
    unknown algorithm were accepted)."""
    with pytest.raises(channel.WireError, match="not a model"):
        channel.decode(bytearray(_model_body({**_MODEL, **change})))
    assert channel.decode(bytearray(_model_body(_MODEL))).n_features == 4  # the valid one


@pytest.mark.parametrize("shape", [(0, 2**62), (2**62, 0), (0, 2**40, 2**40), (1, 0, 2**63)])
def test_an_empty_array_of_an_impossible_shape_is_a_wire_error(shape):
    """A zero in the shape holds no byte, so the size check passed; the reshape raised
    ValueError."""
    body = b"a\x03<f8" + bytes((len(shape),)) + b"".join(struct.pack("<Q", k) for k in shape)
    body += b"\0" * (-len(body) % channel.ALIGN)
    with pytest.raises(channel.WireError):
        channel.decode(bytearray(body))


@pytest.mark.parametrize("item", [np.float64(0.0), 0, (), {}, None, "a"],
                         ids=["0-d array", "int", "tuple", "dict", "None", "str"])
def test_a_frame_of_many_tiny_items_is_refused_past_its_budget(item, monkeypatch):
    """A list of millions of tiny items (0-d arrays: ~19 times their frame bytes as Python
    objects) is refused once it would hold more than BUDGET_FACTOR times its frame (plus
    BUDGET_BYTES); a list of a thousand is fine."""
    import tracemalloc

    assert len(channel.decode(bytearray(_body([item] * 1000)))) == 1000
    monkeypatch.setattr(channel, "BUDGET_BYTES", 1 << 16)  # a small frame shows the rule
    body = bytearray(_body([item] * 200_000))
    tracemalloc.start()
    try:
        with pytest.raises(channel.WireError, match="more items than its size allows"):
            channel.decode(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= channel.BUDGET_FACTOR * len(body) + 2 * channel.BUDGET_BYTES


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_frames_are_a_wire_error_and_nothing_else(data):
    """Valid frames (a model, a CSR matrix, arrays, containers) with bytes flipped, cut or
    inserted: decode returns a value or raises WireError, never another exception."""
    values = [_MODEL, sp.random(5, 7, density=0.4, format="csr", random_state=1),
              (np.arange(6.0).reshape(2, 3), [1, "a", None], {"k": 2.5})]
    which = data.draw(st.integers(0, len(values) - 1))
    body = bytearray(_model_body(values[0]) if which == 0 else _body(values[which]))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        how = data.draw(st.sampled_from(["flip", "cut", "insert", "big"]))
        if how == "flip":
            body[at] ^= data.draw(st.integers(1, 255))
        elif how == "cut":
            del body[at:at + data.draw(st.integers(1, 16))]
        elif how == "insert":
            body[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        else:  # a length or shape field made huge
            body[at:at + 8] = struct.pack("<Q", data.draw(st.sampled_from(
                [2**63, 2**62, 2**32, 2**48 + 1, 0])))
        if not body:
            body = bytearray(b"\x00")
    try:
        channel.decode(body)
    except channel.WireError:
        pass


def test_recv_allocates_as_bytes_arrive():
    """A peer that declares a large frame and sends little of it: the buffer grows with what
    arrived, never to the declared length up front (it zero-filled it before)."""
    import tracemalloc

    a, b = socket.socketpair()
    try:
        declared = 1 << 30
        a.sendall(struct.pack("<Q", declared) + b"x" * 100)
        a.shutdown(socket.SHUT_WR)
        tracemalloc.start()
        try:
            with pytest.raises(ConnectionResetError):
                channel.recv(b)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * channel.FIRST_BYTES
    finally:
        a.close()
        b.close()
    a, b = socket.socketpair()  # and a real frame larger than the first piece still arrives
    try:
        value = np.arange(3 * channel.FIRST_BYTES // 8, dtype=np.float64)
        t = threading.Thread(target=channel.send, args=(a, value))
        t.start()
        out = channel.recv(b)
        t.join()
        np.testing.assert_array_equal(out, value)
    finally:
        a.close()
        b.close()


def test_a_huge_length_is_refused_before_allocating():
    a, b = socket.socketpair()
    try:
        a.sendall(struct.pack("<Q", 2**63))
        with pytest.raises(channel.WireError, match="more than"):
            channel.recv(b)
    finally:
        a.close()
        b.close()


def test_errors_travel_as_type_and_message():
    for e in (DataError("f.svm", "bad row", 7), NonFiniteError("overflow", 3),
              ProblemError("one class"), MemoryError("too big"), KeyError("k")):
        reply = transport.error_reply(e)
        channel.decode(bytearray(b"".join(bytes(b) for b in channel.encode(reply)[1:])))
        with pytest.raises(type(e)) as got:
            transport.raise_reply(*reply[1:])
        assert str(got.value) == str(e)
    # a type of no known name is a RuntimeError naming it
    with pytest.raises(RuntimeError, match="on a Dask worker: Strange: what"):
        transport.raise_reply("Strange", "what", {})


# --------------------------------------------------------------------------- the host

@pytest.fixture
def host():
    h = transport.BlockHost(1)
    yield h
    h.listener.close()


def test_a_pickle_before_authenticating_runs_nothing(host, tmp):
    marker = tmp / "ran"
    payload = pickle.dumps(_Marker(str(marker)))
    with socket.create_connection(host.where) as s:
        _hello(s)
        s.sendall(struct.pack("<Q", len(payload)) + payload)
        assert _closed_by_host(s)
    assert not marker.exists()
    _echo_works(host)
    assert not marker.exists()


@pytest.mark.parametrize("junk", [b"\xff" * 64, struct.pack("<Q", 2**63) + b"\0" * 56,
                                  b"GET / HTTP/1.1\r\n\r\n" + b"\0" * 46])
def test_garbage_and_huge_headers_are_closed_and_the_client_served(host, junk):
    with socket.create_connection(host.where) as s:
        _hello(s)
        s.sendall(junk)
        assert _closed_by_host(s)
    _echo_works(host)


def test_a_wrong_token_is_refused(host):
    with socket.create_connection(host.where) as s:  # a wrong ticket: closed at once
        s.sendall(_answer(os.urandom(channel.TOKEN), _hello(s)))
        assert _closed_by_host(s)
    with socket.create_connection(host.where) as s:  # the right ticket proves nothing
        s.sendall(_answer(os.urandom(channel.TOKEN), _hello(s), ticket=host.token))
        assert _closed_by_host(s)
    _echo_works(host)


def test_a_slow_client_is_served_through_a_connection_flood():
    """Strangers opening connections without end (each pushes the oldest pending one out of
    the MAX_PENDING): the client, which answers the challenge only after 350 of them have
    connected after it (a few seconds), holds its
    place by its ticket and is served; the flood's loop is bounded in count and time."""
    h = transport.BlockHost(1)
    stop = threading.Event()
    opened = [0]

    def flood():
        held = []
        deadline = time.monotonic() + 20
        while not stop.is_set() and opened[0] < 200_000 and time.monotonic() < deadline:
            try:
                held.append(socket.create_connection(h.where, timeout=2))
                opened[0] += 1
            except OSError:
                time.sleep(0.01)
            if len(held) > 700:
                for s in held[:200]:
                    s.close()
                del held[:200]
        for s in held:
            s.close()

    attackers = [threading.Thread(target=flood) for _ in range(2)]
    for t in attackers:
        t.start()
    try:
        while opened[0] < 1500:  # the flood is on
            time.sleep(0.01)
        with socket.create_connection(h.where, timeout=30) as s:
            s.sendall(channel.ticket(h.token))
            after = opened[0]
            wait = time.monotonic() + 15  # slow: meanwhile hundreds of strangers connect
            while opened[0] - after <= transport.MAX_PENDING + 100 and time.monotonic() < wait:
                time.sleep(0.1)
            before = opened[0]
            hello = channel.recv_exact(s, len(channel.MAGIC) + channel.NONCE)
            s.sendall(_answer(h.token, hello)[channel.TICKET:])
            proof = channel.recv_exact(s, channel.DIGEST)
        assert before - after > transport.MAX_PENDING  # enough to push it out, unticketed
        assert len(proof) == channel.DIGEST
    finally:
        stop.set()
        for t in attackers:
            t.join()
        h.listener.close()



def test_a_replayed_answer_opens_nothing(host):
    """An answer recorded on one connection (its challenge) does not open another."""
    a = socket.create_connection(host.where)
    b = socket.create_connection(host.where)
    try:
        recorded = _answer(host.token, _hello(a))
        _hello(b)
        b.sendall(recorded)
        assert _closed_by_host(b)
        a.sendall(recorded)  # on its own connection the answer is the right one
        proof = channel.recv_exact(a, channel.DIGEST)
        assert len(proof) == channel.DIGEST
    finally:
        a.close()
        b.close()


def test_idle_strangers_neither_block_the_client_nor_outlive_the_timeout(host, monkeypatch):
    idle = [socket.create_connection(host.where) for _ in range(20)]
    try:
        t = time.perf_counter()
        _echo_works(host)
        assert time.perf_counter() - t < 5.0
    finally:
        for s in idle:
            s.close()


def test_an_idle_stranger_is_closed_after_the_handshake_time(monkeypatch):
    monkeypatch.setattr(channel, "HANDSHAKE_SECONDS", 0.5)
    h = transport.BlockHost(1)
    try:
        with socket.create_connection(h.where) as s:
            _hello(s)
            t = time.perf_counter()
            assert _closed_by_host(s, within=10)
            assert time.perf_counter() - t < 5.0
        _echo_works(h)
    finally:
        h.listener.close()


def test_the_listener_closes_once_the_client_is_in(host):
    blocks = _client(host)
    try:
        with pytest.raises(OSError):
            socket.create_connection(host.where, timeout=2).close()
        assert blocks.request([(0, "echo", ("still here",))]) == ["still here"]
    finally:
        blocks.close()


def test_a_client_refuses_a_host_without_the_token():
    """The handshake is mutual: a listener that answers without the token is not a host."""
    srv = socket.create_server(("127.0.0.1", 0))

    def fake():
        c, _ = srv.accept()
        c.sendall(channel.MAGIC + os.urandom(channel.NONCE))
        channel.recv_exact(c, channel.NONCE + channel.DIGEST)
        c.sendall(os.urandom(channel.DIGEST))
        c.close()

    t = threading.Thread(target=fake)
    t.start()
    try:
        with socket.create_connection(srv.getsockname()) as s:
            with pytest.raises(channel.AuthenticationError):
                channel.client_handshake(s, os.urandom(channel.TOKEN))
    finally:
        t.join()
        srv.close()


def test_only_the_hosts_methods_are_served(host):
    blocks = _client(host)
    try:
        for method, args in [("__init__", (1,)), ("_serve", ()), ("call", ([0], "__del__", ())),
                             ("call", ([0], "lines", ()))]:
            with pytest.raises(RuntimeError, match="WireError"):
                blocks.request([(0, method, args)])
        assert blocks.request([(0, "echo", (3,))]) == [3]  # the connection goes on
    finally:
        blocks.close()


# --------------------------------------------------------------------------- the hosts' links

def _graph_hosts(X, y, cuts, slots_of):
    """Graph blocks of rows ``cuts`` on block hosts in this process, block b in host
    ``slots_of[b]``'s next slot, as ssl-train --cluster lays them out."""
    hosts = [transport.BlockHost(1, "graph") for _ in range(max(slots_of) + 1)]
    blocks = transport.ClusterBlocks([_Actor(h) for h in hosts], [f"h{i}" for i in
                                                                   range(len(hosts))])
    used = [0] * len(hosts)
    for b, h in enumerate(slots_of):
        a, e = cuts[b], cuts[b + 1]
        blocks.request([(h, "receive_rows", (used[h], X[a:e], y[a:e], np.ones(e - a), "X"))])
        blocks.request([(h, "finish", (used[h], "X", False, a))])
        blocks.layout.append((h, used[h]))
        used[h] += 1
    blocks.d = X.shape[1]
    return hosts, blocks


def test_hosts_exchange_the_halo_among_themselves_as_the_relay_does(monkeypatch):
    """Three block hosts linked to each other (one holding two blocks, one an empty block):
    a lapsvm fit with the halo exchanged host to host is the fit with the halo relayed
    through this process, bit for bit, and is one process's fit."""
    from ssl_svm.solvers import graph_distributed
    from ssl_svm.solvers.registry import ALGORITHMS

    rng = np.random.default_rng(0)
    n = 300
    X = sp.csr_matrix(rng.normal(size=(n, 4)) + np.where(np.arange(n) % 2, 2.5, 0.0)[:, None])
    y = np.where(np.arange(n) % 10 < 2, np.arange(n) % 2 + 1.0, 0.0)
    p = ALGORITHMS["lapsvm"].defaults()
    p.update(landmarks=60, landmark_fit="project", laplacian_degree=2)
    cuts = [0, 90, 90, 200, 300]
    out = {}
    for direct in (True, False):
        monkeypatch.setattr(graph_distributed, "DIRECT", direct)
        hosts, blocks = _graph_hosts(X, y, cuts, [0, 1, 2, 1])
        try:
            out[direct] = graph_distributed.fit_model(blocks, "lapsvm", [1.0, 2.0], p)
            if direct:
                assert [len(h.peer_socks) for h in hosts] == [2, 2, 2]
                assert all(h.peer_listener is None for h in hosts)  # closed once linked
        finally:
            blocks.close()
    np.testing.assert_array_equal(out[True].function.coef, out[False].function.coef)
    ref = ALGORITHMS["lapsvm"].fit(X, y, None, p)
    Xt = sp.csr_matrix(rng.normal(size=(50, 4)))
    np.testing.assert_allclose(out[True].decision_function(Xt), ref.decision_function(Xt),
                               rtol=0, atol=1e-8)


def test_a_hosts_peer_listener_refuses_strangers_and_closes_once_linked(tmp):
    """The hosts' own listener is authenticated as the client's channel is: a wrong token or
    a pickle is closed unread, the hosts link all the same, and then nothing connects."""
    hosts = [transport.BlockHost(1, "graph") for _ in range(2)]
    blocks = transport.ClusterBlocks([_Actor(h) for h in hosts], ["a", "b"])
    try:
        listing = blocks.request([(h, "peer_listen", ()) for h in range(2)])
        where = tuple(listing[0][:2])
        marker = tmp / "ran"
        payload = pickle.dumps(_Marker(str(marker)))
        closed = []

        def stranger(how):
            with socket.create_connection(where) as s:
                hello = _hello(s)  # once the host accepts (it does while it links)
                if how == "wrong token":
                    s.sendall(_answer(os.urandom(channel.TOKEN), hello))
                elif how == "the client's token":  # not the peers'
                    s.sendall(_answer(hosts[0].token, hello))
                else:
                    s.sendall(struct.pack("<Q", len(payload)) + payload)
                closed.append(_closed_by_host(s))

        threads = [threading.Thread(target=stranger, args=(how,))
                   for how in ("wrong token", "the client's token", "pickle")]
        for t in threads:
            t.start()
        time.sleep(0.5)  # the strangers first in the listener's queue
        blocks.layout = [(0, 0), (1, 0)]
        blocks.request([(h, "peer_connect", (h, listing, blocks.layout)) for h in range(2)])
        for t in threads:
            t.join(30)
        assert closed == [True] * 3 and not marker.exists()
        assert len(hosts[0].peer_socks) == len(hosts[1].peer_socks) == 1
        with pytest.raises(OSError):
            socket.create_connection(where, timeout=2).close()
    finally:
        blocks.close()
    assert hosts[0].peer_socks == {} and hosts[1].peer_socks == {}  # dropped with the client


def test_a_peer_that_sends_no_halo_is_a_wire_error():
    """A linked host answers a halo exchange with something else: refused as not a halo
    message (never looked into further), one error."""
    hosts = [transport.BlockHost(1, "graph") for _ in range(2)]
    blocks = transport.ClusterBlocks([_Actor(h) for h in hosts], ["a", "b"])
    try:
        X = sp.csr_matrix(np.eye(4))
        for h in range(2):
            blocks.request([(h, "receive_rows", (0, X[2 * h:2 * h + 2], np.zeros(2),
                                                 np.ones(2), "X"))])
            blocks.request([(h, "finish", (0, "X", False, 2 * h))])
        blocks.layout = [(0, 0), (1, 0)]
        blocks.connect_peers()
        peer = hosts[1].peer_socks[0]
        blocks.request([(0, "call", ([0], "put", ("v", np.zeros(2))))])
        blocks.request([(0, "call", ([0], "set_sends", ([np.zeros(0, np.int64)] * 2,)))])
        channel.send(peer, ("not", "a", "halo"))
        with pytest.raises(RuntimeError, match="WireError|not a halo"):
            blocks.request([(0, "exchange_then", ([0], "v", None, [()]))])
    finally:
        blocks.close()


# --------------------------------------------------------------------------- on a cluster

distributed = pytest.importorskip("distributed")  # a test extra: pip install .[test]


def _local_cluster(n=2, **kw):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address=None, **kw)


def _fit(client, path):
    """ssl-train --cluster's fit (tsvm, λ = 1e-3) of ``path`` on ``client``'s workers."""
    from ssl_svm.formats.model_file import model_to_text
    from ssl_svm.solvers.registry import ALGORITHMS

    algo = ALGORITHMS["tsvm"]
    params = {p.name: p.default for p in algo.params}
    params["lambda"] = 1e-3

    def work(blocks):
        socks = list(blocks.socks)
        return model_to_text(cluster.fit(cluster.prepare(blocks, algo, str(path)), algo,
                                         params)), socks

    return transport.run(client, [(str(path), False)], False, work, say=lambda *a: None)


def test_tls_cluster_tls_channel_and_the_same_model(tmp):
    """On a cluster with TLS certificates the channel is TLS with the same certificates (a
    peer without the cluster's certificate gets no TLS session), and the model is the one of a
    cluster without TLS."""
    from conftest import SAMPLES

    data = SAMPLES / "pcmac.train"
    with _local_cluster() as plain, distributed.Client(plain) as c:
        expected, socks = _fit(c, data)
        assert not any(isinstance(s, __import__("ssl").SSLSocket) for s in socks)
    sec = distributed.Security.temporary()
    with _local_cluster(security=sec) as tls, distributed.Client(tls, security=sec) as c:
        assert tls.scheduler_address.startswith("tls://")
        got, socks = _fit(c, data)
        import ssl

        assert all(isinstance(s, ssl.SSLSocket) for s in socks)
        # a host that serves TLS: a client with no certificate gets no session
        fut = c.submit(transport.BlockHost, 1, actor=True, pure=False)
        h, port, token, is_tls = fut.result().channel().result()
        assert is_tls
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection((h, port), timeout=10) as raw:
            with pytest.raises((ssl.SSLError, OSError)):
                with ctx.wrap_socket(raw) as s:
                    channel.client_handshake(s, token)
        # and one without TLS at all neither
        with socket.create_connection((h, port), timeout=10) as s:
            s.sendall(b"\0" * 64)
            assert _closed_by_host(s)
        # a client that requires encryption refuses a host that offers none
        with _local_cluster(1) as plain2, distributed.Client(plain2) as c2:
            fut = c2.submit(transport.BlockHost, 1, actor=True, pure=False)
            with pytest.raises(DataError, match="requires encryption"):
                transport.ClusterBlocks([fut.result()], ["w"], sec)
    assert got == expected


def test_the_workers_environment_is_put_back_after_a_fit():
    from conftest import SAMPLES

    keys = ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT", "NUMBA_NUM_THREADS",
            "OPENBLAS_NUM_THREADS")

    def env():
        return {k: os.environ.get(k) for k in keys}

    # the nanny gives its workers variables of its own: remove ours before the fit
    with _local_cluster() as c, distributed.Client(c) as client:
        def clear():
            for k in keys:
                os.environ.pop(k, None)

        client.run(clear)
        before = client.run(env)
        _fit(client, SAMPLES / "pcmac.train")
        assert client.run(env) == before
        assert all(v is None for e in before.values() for v in e.values())


def _stat(model_text: str, name: str) -> list[float]:
    line = next(x for x in model_text.splitlines() if x.startswith(f"stat {name} "))
    return [float(v) for v in line.split()[2:]]


def _swap_labels(src, dst):
    """``src`` with every +1/-1 label swapped: the same size, another problem."""
    out = []
    for line in open(src, "rb"):
        head, _, rest = line.partition(b" ")
        out.append({b"+1": b"-1", b"-1": b"+1"}.get(head, head) + b" " + rest)
    dst.write_bytes(b"".join(out))


def _cluster_started_in(folder):
    """A LocalCluster whose workers start in ``folder``: /proc/self/cwd/train.svm is then
    each worker's copy there (a node-local copy at the client's path)."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        return _local_cluster()
    finally:
        os.chdir(here)


def _fit_beside_another_copy(mine, theirs, args, model):
    """ssl-train --cluster ``args`` of /proc/self/cwd/train.svm run in ``mine`` (the client's
    file), the workers seeing the copy in ``theirs``; asserts it succeeded."""
    import subprocess

    from conftest import BIN

    c = _cluster_started_in(theirs)
    try:
        r = subprocess.run([str(BIN / "ssl-train"), *args, "--cluster", c.scheduler_address,
                            "/proc/self/cwd/train.svm", str(model)], cwd=mine,
                           capture_output=True, text=True, timeout=300)
    finally:
        c.close()
    assert r.returncode == 0, r.stderr
    return r


def test_a_workers_own_different_copy_is_not_read(tmp):
    """A worker that sees another file of the same size at the path (a stale node-local copy:
    here /proc/self/cwd is each process's own folder) does not read it: the client's file is
    shipped, said as a warning, and the model is the one-process model of the client's file."""
    from conftest import SAMPLES, run

    mine, theirs = tmp / "client", tmp / "workers"
    mine.mkdir()
    theirs.mkdir()
    (mine / "train.svm").write_bytes((SAMPLES / "pcmac.train").read_bytes())
    _swap_labels(SAMPLES / "pcmac.train", theirs / "train.svm")
    assert (mine / "train.svm").stat().st_size == (theirs / "train.svm").stat().st_size
    args = ["-a", "tsvm", "-W", "1e-3"]
    run("ssl-train", "-q", "--check", "none", *args, mine / "train.svm", tmp / "local", check=0)
    r = _fit_beside_another_copy(mine, theirs, args, tmp / "m")
    assert "differs from this one" in r.stderr and "read here and shipped" in r.stderr
    np.testing.assert_allclose(_stat((tmp / "m").read_text(), "objective"),
                               _stat((tmp / "local").read_text(), "objective"), rtol=1e-9)
    for m in ("m", "local"):
        run("ssl-predict", mine / "train.svm", tmp / m, tmp / f"{m}.p", check=0)
    assert (tmp / "m.p").read_bytes() == (tmp / "local.p").read_bytes()


def _rows_text(rows: int, seed: int) -> bytes:
    """A sparse two-class file of ``rows`` lines (every 10th labeled, ±1 written '+1'/'-1'),
    about 250 bytes a line."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=200)
    out = []
    for i in range(rows):
        idx = np.sort(rng.choice(200, 20, replace=False))
        val = rng.normal(size=20)
        label = ("+1" if val @ w[idx] > 0 else "-1") if i % 10 == 0 else "0"
        out.append(label + " " + " ".join(f"{j + 1}:{v:.5f}" for j, v in zip(idx, val)))
    return ("\n".join(out) + "\n").encode()


def _swap_between_samples(data: bytes) -> tuple[bytes, int]:
    """``data`` with the +1/-1 labels swapped on every labeled line that lies wholly between
    the pieces :func:`ranges.file_facts` samples (the same size, the same fingerprint);
    returns it and the lines swapped."""
    size = len(data)
    step = (size - ranges.SAMPLE_BYTES) / (ranges.SAMPLES - 1)
    pieces = [(int(k * step), int(k * step) + ranges.SAMPLE_BYTES)
              for k in range(ranges.SAMPLES)]
    out, at, swapped = [], 0, 0
    for line in data.splitlines(keepends=True):
        end = at + len(line)
        clear = all(end <= a or at >= b for a, b in pieces)
        head = line[:2]
        if clear and head in (b"+1", b"-1"):
            line = (b"-1" if head == b"+1" else b"+1") + line[2:]
            swapped += 1
        out.append(line)
        at = end
    return b"".join(out), swapped


def test_a_stale_copy_differing_only_between_the_sampled_pieces_is_not_read(tmp):
    """A worker's own copy at the path, of the same size and the same sampled fingerprint,
    whose labels are swapped only on lines between the sampled pieces: each worker's parse is
    hashed and compared with the client's hash of the same byte range, so the part that
    differs is shipped from here (a warning naming the worker) and the model is the
    one-process model of the client's file."""
    from conftest import run

    mine, theirs = tmp / "client", tmp / "workers"
    mine.mkdir()
    theirs.mkdir()
    data = _rows_text(24000, 5)
    assert len(data) > 1.25 * ranges.SAMPLES * ranges.SAMPLE_BYTES  # sampled, gaps between
    stale, swapped = _swap_between_samples(data)
    assert swapped > 100
    (mine / "train.svm").write_bytes(data)
    (theirs / "train.svm").write_bytes(stale)
    assert ranges.file_facts(str(mine / "train.svm")) == \
        ranges.file_facts(str(theirs / "train.svm"))  # invisible to the sampled check
    args = ["-a", "tsvm", "-W", "1e-3", "--check", "none"]
    run("ssl-train", "-q", *args, mine / "train.svm", tmp / "local", check=0)
    r = _fit_beside_another_copy(mine, theirs, args, tmp / "m")
    warned = [x for x in r.stderr.splitlines() if "differs from this one in bytes" in x]
    assert len(warned) == 2 and all("127.0.0.1" in x for x in warned), r.stderr
    np.testing.assert_allclose(_stat((tmp / "m").read_text(), "objective"),
                               _stat((tmp / "local").read_text(), "objective"), rtol=1e-9)
    for m in ("m", "local"):
        run("ssl-predict", mine / "train.svm", tmp / m, tmp / f"{m}.p", check=0)
    assert (tmp / "m.p").read_bytes() == (tmp / "local.p").read_bytes()


def test_a_bad_line_in_a_stale_copy_is_not_the_clients_error(tmp):
    """A worker's copy with a malformed line between the sampled pieces, where the client's
    file has none: that part is shipped and the fit succeeds (its parse error is not the
    client's); run from the folder of that copy, the same line is the client's own error,
    named by its line number."""
    from conftest import run

    mine, theirs = tmp / "client", tmp / "workers"
    mine.mkdir()
    theirs.mkdir()
    data = _rows_text(24000, 6)
    size = len(data)
    step = (size - ranges.SAMPLE_BYTES) / (ranges.SAMPLES - 1)
    lines = data.splitlines(keepends=True)
    at = np.cumsum([0] + [len(x) for x in lines])
    k = next(i for i in range(len(lines) * 3 // 4, len(lines))  # in the second worker's part
             if all(at[i + 1] <= int(j * step) or at[i] >= int(j * step) + ranges.SAMPLE_BYTES
                    for j in range(ranges.SAMPLES)))
    bad = lines[k].replace(b" ", b" x", 1)[:len(lines[k]) - 1] + b"\n"  # the same size
    (mine / "train.svm").write_bytes(data)
    (theirs / "train.svm").write_bytes(b"".join(lines[:k] + [bad] + lines[k + 1:]))
    assert ranges.file_facts(str(mine / "train.svm")) == \
        ranges.file_facts(str(theirs / "train.svm"))
    c = _cluster_started_in(theirs)
    try:
        args = ["-a", "svm", "--cluster", c.scheduler_address]
        r = run("ssl-train", *args, "/proc/self/cwd/train.svm", tmp / "m", cwd=mine)
        assert r.returncode == 0 and "differs from this one in bytes" in r.stderr, r.stderr
        r = run("ssl-train", *args, "/proc/self/cwd/train.svm", tmp / "m2", cwd=theirs,
                check=1)
        assert r.stderr.strip().splitlines()[-1].startswith(
            f"ssl-train: error: /proc/self/cwd/train.svm:{k + 1}: "), r.stderr
    finally:
        c.close()


def test_two_workers_lost_at_once_is_no_hang(tmp):
    """Two of three workers killed at once mid-fit: the fit starts over on what is left (or
    says in one line that it cannot), in bounded time, never hangs."""
    import signal
    import subprocess

    from conftest import BIN, shared

    data = shared("bench", "w8a-200", "train.svm")
    with _local_cluster(3) as c, distributed.Client(c) as client:
        p = subprocess.Popen([str(BIN / "ssl-train"), "-a", "tsvm", "-W", "1e-3", "--verbose",
                              "--cluster", c.scheduler_address, str(data), str(tmp / "m")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "λ_u step" in line or "Newton step" in line:
                break
        for pid in sorted(client.run(os.getpid).values())[-2:]:
            os.kill(pid, signal.SIGKILL)
        try:
            err = p.communicate(timeout=400)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("ssl-train --cluster hangs after losing two workers") from None
    assert "Traceback" not in err and " - distributed." not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    if p.returncode == 0:
        assert (tmp / "m").exists()
    else:
        assert p.returncode == 1 and lines[-1].startswith("ssl-train: error: "), err


def test_the_scheduler_killed_mid_fit_leaves_only_the_commands_lines(tmp):
    """The scheduler killed mid-fit: stderr carries the command's own lines only (no Dask log
    line), and the run ends (the fit's own channel goes on without the scheduler)."""
    import signal
    import subprocess

    from conftest import BIN, shared

    sched = subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                              "0", "--no-dashboard"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    workers = []
    try:
        address = None
        for line in sched.stdout:
            if "Scheduler at:" in line:
                address = line.split("Scheduler at:")[1].strip()
                break
        assert address
        threading.Thread(target=sched.stdout.read, daemon=True).start()
        workers = [subprocess.Popen([str(BIN / "dask"), "worker", address, "--nthreads", "1",
                                     "--host", "127.0.0.1", "--no-dashboard", "--no-nanny"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for _ in range(2)]
        with distributed.Client(address) as cl:
            cl.wait_for_workers(2, timeout=60)
        data = shared("bench", "w8a-200", "train.svm")
        p = subprocess.Popen([str(BIN / "ssl-train"), "-a", "tsvm", "-W", "1e-3", "--verbose",
                              "--cluster", address, str(data), str(tmp / "m")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if "λ_u step" in line or "Newton step" in line:
                break
        sched.send_signal(signal.SIGKILL)
        try:
            err = p.communicate(timeout=300)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("ssl-train --cluster hangs after losing the scheduler") from None
    finally:
        sched.kill()
        for w in workers:
            w.kill()
            w.wait()
    assert "Traceback" not in err and "Failed to reconnect" not in err, err
    assert " - distributed." not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    if p.returncode != 0:
        assert p.returncode == 1 and lines[-1].startswith("ssl-train: error: "), err
        assert len([x for x in lines if x.startswith("ssl-train: error: ")]) == 1, err


def test_a_stranger_attacking_mid_fit_changes_nothing(tmp):
    """While two fits run, a stranger sends pickles, garbage and huge headers to every port
    the workers listen on besides Dask's own: no code runs, and each model is the one-process
    model, the same bytes both times."""
    import subprocess

    import psutil
    from conftest import BIN, SAMPLES, run

    marker = tmp / "ran"
    payload = pickle.dumps(_Marker(str(marker)))
    attacks = [struct.pack("<Q", len(payload)) + payload, struct.pack("<Q", 2**63),
               os.urandom(64)]
    args = ["-a", "da", "-W", "1e-3", str(SAMPLES / "pcmac.train")]
    run("ssl-train", "-q", "--check", "none", *args, tmp / "local", check=0)
    stop = threading.Event()
    hits = []
    models = set()
    with _local_cluster() as c, distributed.Client(c) as client:
        pids = client.run(os.getpid)
        dask_ports = {int(a.rsplit(":", 1)[1]) for a in pids}

        def attack():
            while not stop.is_set():
                for pid in pids.values():
                    try:
                        conns = psutil.Process(pid).net_connections(kind="tcp")
                    except psutil.Error:
                        continue
                    for k in conns:
                        if k.status != psutil.CONN_LISTEN or k.laddr.port in dask_ports:
                            continue
                        for a in attacks:
                            try:
                                with socket.create_connection(k.laddr, timeout=1) as s:
                                    s.sendall(a)
                                    hits.append(k.laddr.port)
                            except OSError:
                                pass
                time.sleep(0.001)

        t = threading.Thread(target=attack)
        t.start()
        try:
            for _ in range(2):
                r = subprocess.run([str(BIN / "ssl-train"), "-q", "--cluster",
                                    c.scheduler_address, *args, str(tmp / "m")],
                                   capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, r.stderr
                np.testing.assert_allclose(_stat((tmp / "m").read_text(), "objective"),
                                           _stat((tmp / "local").read_text(), "objective"),
                                           rtol=1e-9)
                models.add((tmp / "m").read_bytes())
        finally:
            stop.set()
            t.join()
    print(f"{len(hits)} attacks reached a block host's listener")
    assert not marker.exists()
    assert len(models) == 1  # the same blocks, the same bytes, attacked or not


def _limit_in_task():
    import sys

    from ssl_svm.solvers.host import pools

    fresh = "numba" not in sys.modules
    before = dict(os.environ)
    pools.limit_threads(None)
    import numba

    return fresh, before == dict(os.environ), numba.get_num_threads()


def test_a_tune_task_leaves_the_workers_environment_alone():
    """ssl-tune --cluster's tasks take their worker's share of threads without writing the
    worker's environment (it wrote NUMBA_NUM_THREADS when numba had not started)."""
    with _local_cluster(1) as c, distributed.Client(c) as client:
        fresh, same, threads = client.submit(_limit_in_task, pure=False).result(timeout=120)
    assert fresh  # the case that wrote the environment before
    assert same and threads >= 1
