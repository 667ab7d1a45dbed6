"""A TCP proxy on loopback between a worker and the PostgreSQL server, that can cut,
delay and black-hole what passes through it (the network faults of tests/pg/test_faults.py).

``FaultProxy(target_port)`` listens on ``127.0.0.1`` (a free port, :attr:`port`) and
relays every connection to ``127.0.0.1:target_port``, one thread per direction. Modes,
switched at any time:

- :meth:`blackhole`: nothing more is relayed in either direction, and new connections
  wait too; the sockets stay open (a partition: the worker's call hangs, the server
  sees an idle client). :meth:`heal` relays again: what was sent meanwhile arrives late,
  as TCP delivers it once a partition heals;
- :meth:`cut`: every open connection is closed at once (both ends see it drop);
- :meth:`cut_commits`: the next ``n`` transactions' ``COMMIT`` reach the server, and the
  connection is then closed before the server's answer is relayed (a commit in flight:
  done on the server, its answer lost); given ``after``, only transactions that sent
  those bytes count (e.g. ``b'"event_data"'``, in every envelope a worker appends: not a
  claim's commit, which a worker idle between turns also makes). Bytes sent by a
  statement of its own (autocommit) or by a transaction rolled back do not count for the
  next one: the server's word that the session is idle again forgets them;
- :meth:`cut_answers`: the next ``n`` statements that hold given bytes (e.g. an event
  type among an insert's parameters) reach the server, and the connection is then closed
  before the server's answer is relayed (a statement done on the server in autocommit,
  its answer lost: what :meth:`cut_commits` does to a transaction);
- :meth:`stall_at_sync`: on the next connection that sends a ``Sync`` message (what ends
  a statement, or a pipeline's batch, in PostgreSQL's extended protocol), everything
  before it is relayed and nothing from it on, while the connection stays open (a
  partition in the middle of a statement: the server ran it and waits for the rest);
- ``delay``: seconds each chunk waits before it is relayed.

It counts what it did (:attr:`cuts`, :attr:`commits_cut`, :attr:`answers_cut`,
:attr:`syncs_stalled`), so a test can tell a fault
happened."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

#: the server's ReadyForQuery with status idle: no transaction is open on the session
_IDLE = b"Z\x00\x00\x00\x05I"


class _Pair:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.cut_on_answer = False
        #: the transaction under way sent the bytes a commit cut waits for
        self.sent_marker = False
        #: the last bytes the client sent (a marker split between two chunks)
        self.tail = b""
        #: the server's next answer is lost (the connection closed before it is relayed)
        self.lose_answer = False
        self.closed = False
        self.stalled = False
        #: the framing of the client's messages was lost (a header split between chunks):
        #: no stall in this connection from then on
        self.unframed = False
        #: bytes of a message begun in an earlier chunk (the framing of the client's
        #: messages, followed only while a stall is armed)
        self.inside = 0

    def close(self) -> None:
        self.closed = True
        for s in (self.client, self.server):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


class FaultProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.delay = 0.0
        self.cuts = 0
        self.commits_cut = 0
        self.answers_cut = 0
        self._answers_to_cut = 0
        self._answer_after = b""
        self.syncs_stalled = 0
        self._to_cut = 0
        self._cut_after: bytes | None = None
        self._stall_sync = False
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._pairs: list[_Pair] = []
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, dsn: str) -> str:
        """``dsn`` (a URL of the proxied server on 127.0.0.1) through this proxy."""
        return dsn.replace(f"127.0.0.1:{self.target_port}/", f"127.0.0.1:{self.port}/")

    # ── the faults ──────────────────────────────────────────────────────────────

    def blackhole(self) -> None:
        self._open.clear()

    def heal(self) -> None:
        self._open.set()

    def cut(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()
        self.cuts += 1

    def cut_commits(self, n: int, after: bytes | None = None) -> None:
        with self._lock:
            if self._to_cut and after != self._cut_after:
                raise ValueError("cuts of commits with another marker are still pending")
            self._to_cut += n
            self._cut_after = after

    def cut_answers(self, n: int, after: bytes) -> None:
        with self._lock:
            self._answers_to_cut += n
            self._answer_after = after

    def stall_at_sync(self) -> None:
        """Arm the stall: call it while the connection to stall is idle (between
        statements), so that its next chunk starts at a message's first byte."""
        with self._lock:
            self._stall_sync = True

    def close(self) -> None:
        self._stopping = True
        self._open.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.cut()

    # ── the relay ───────────────────────────────────────────────────────────────

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._open.wait()
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            pair = _Pair(client, server)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._relay, args=(pair, True), daemon=True).start()
            threading.Thread(target=self._relay, args=(pair, False), daemon=True).start()

    def _relay(self, pair: _Pair, upstream: bool) -> None:
        src, dst = (pair.client, pair.server) if upstream else (pair.server, pair.client)
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self._open.wait()
                if self.delay:
                    time.sleep(self.delay)
                if pair.closed:
                    break
                if pair.stalled:
                    continue  # the rest of a stalled connection's stream is held
                if upstream and self._stall_sync:
                    data = self._up_to_sync(pair, data)
                if upstream and self._answers_to_cut and self._answer_after in data:
                    with self._lock:
                        if self._answers_to_cut > 0:
                            self._answers_to_cut -= 1
                            pair.lose_answer = True
                elif not upstream and pair.lose_answer:
                    # the server's first word on the statement (it sends its answer once
                    # the statement's Sync is done, committed; an error at once): lose
                    # it, and everything after
                    self.answers_cut += 1
                    break
                marker = self._cut_after
                if upstream and marker is not None:
                    seen = pair.tail + data
                    if marker in seen:
                        pair.sent_marker = True
                    pair.tail = seen[-(len(marker) - 1) :] if len(marker) > 1 else b""
                elif not upstream and _IDLE in data:
                    pair.sent_marker = False  # that statement, or transaction, is over
                if upstream and b"COMMIT" in data:
                    with self._lock:
                        if self._to_cut > 0 and (self._cut_after is None or pair.sent_marker):
                            self._to_cut -= 1
                            pair.cut_on_answer = True
                    pair.sent_marker = False
                elif not upstream and pair.cut_on_answer and b"COMMIT\x00" in data:
                    # the server says the COMMIT is done: lose that answer
                    self.commits_cut += 1
                    break
                dst.sendall(data)
        except OSError:
            pass
        pair.close()
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)

    def _up_to_sync(self, pair: _Pair, data: bytes) -> bytes:
        """What of ``data`` to relay while a stall is armed: all of it, or what comes
        before its first ``Sync`` (type ``S``, length 4), stalling ``pair`` from there."""
        if pair.unframed:
            return data
        i = pair.inside
        while i < len(data):
            if data[i : i + 5] == b"S\x00\x00\x00\x04":
                with self._lock:
                    if not self._stall_sync:
                        break
                    self._stall_sync = False
                    self.syncs_stalled += 1
                pair.stalled = True
                return data[:i]
            if i + 5 > len(data):
                pair.unframed = True  # a header split between chunks: no stall here
                return data
            i += 1 + int.from_bytes(data[i + 1 : i + 5], "big")
        pair.inside = max(0, i - len(data))
        return data
