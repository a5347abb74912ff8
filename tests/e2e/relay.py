"""A TCP relay on loopback: the network between SGLang's router and one host, which a test can cut.

Every connection made to the relay is piped to the target both ways, byte for byte, on threads of
its own (so it runs whatever the test's event loop is doing). ``cut()`` closes the listening socket
and every piped connection: from then on the router's health checks to that address are refused,
while the host's own agent, which reaches its engine directly, still reads it as ready.
"""

from __future__ import annotations

import contextlib
import socket
import threading

HOST = "127.0.0.1"


class Relay:
    def __init__(self, target_port: int) -> None:
        self.target = (HOST, target_port)
        self.listener = socket.create_server((HOST, 0))
        self.port = int(self.listener.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}"
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.cut_done = False
        threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.cut_done:
                    client.close()
                    upstream.close()
                    return
                self.open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """No more connections, and none of the open ones goes on."""
        with self.lock:
            self.cut_done = True
            held, self.open = self.open, set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
        self.listener.close()
        for s in held:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
