"""One host of the fleet as the console holds it: its target, link, model and Session of its own."""

from __future__ import annotations

from dataclasses import dataclass

from agent.wire.api import AgentStatus
from console.fleet.hosts import HostTarget
from console.link import Link
from console.link.backoff import Backoff
from console.link.client import AgentClient
from console.model import ConsoleModel
from console.session import Session


@dataclass
class Host:
    target: HostTarget
    link: Link
    model: ConsoleModel
    session: Session
    backoff: Backoff
    agent_status: AgentStatus | None = None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def client(self) -> AgentClient:
        return self.session.client

    @property
    def connected(self) -> bool:
        return self.model.link.state == "connected"

    @property
    def engine_url(self) -> str | None:
        """This host's engine as the router names it: the hosts file's, else the agent's own."""
        if self.target.worker_url:
            return self.target.worker_url
        return self.agent_status.engine_url if self.agent_status is not None else None

    def writable_client(self) -> AgentClient | None:
        """The client to change this host through, while its link is up and it may be written."""
        return self.client if self.connected and not self.session.readonly else None
