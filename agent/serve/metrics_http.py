"""Where the Prometheus page listens: loopback by default, any address only when asked for explicitly.

The page needs no token: it is read-only and holds nothing secret (no keys, no token, no URLs with
credentials; the profile name and numbers only). It is still loopback-only unless the operator
passes ``--metrics-listen-any``, because a scrape target on a public interface is a decision, not a
default. The HTTP server is prometheus-client's own (``start_http_server``: a threaded WSGI server
serving the registry on every path, ``/metrics`` included), bound before the engine starts so a
taken port is an error at start-up, not a silent gap in the graphs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from prometheus_client import start_http_server
from prometheus_client.core import CollectorRegistry
from prometheus_client.process_collector import ProcessCollector

from agent.serve.exporter import AgentExporter
from agent.serve.listen import ListenError, parse_host_port

log = logging.getLogger(__name__)

FLAG = "--metrics-listen"
ANY_FLAG = "--metrics-listen-any"


def parse_metrics_listen(text: str, *, allow_any: bool = False) -> tuple[str, int]:
    """``127.0.0.1:PORT``, ``[::1]:PORT``, ``localhost:PORT``; with ``allow_any`` any IP address."""
    return parse_host_port(
        text,
        flag=FLAG,
        example="127.0.0.1:9464",
        allow_any=allow_any,
        not_loopback=f"the metrics page listens on loopback unless {ANY_FLAG} is given (it needs no token, "
        "so firewall it)",
    )


@dataclass
class MetricsServer:
    """The running page: its address and prometheus-client's server, to stop it on exit."""

    host: str
    port: int
    exporter: AgentExporter
    _httpd: Any

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def start_metrics_server(host: str, port: int, exporter: AgentExporter) -> MetricsServer:
    """Bind and serve ``exporter`` (plus the agent process's own ``process_*`` series)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    ProcessCollector(registry=registry)
    try:
        httpd, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ListenError(f"{FLAG}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server = MetricsServer(host, int(httpd.server_port), exporter, httpd)
    log.info("agent metrics on %s", server.url)
    return server
