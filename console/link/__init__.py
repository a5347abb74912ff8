"""Ways to reach the agent: a UNIX socket on this machine, the same socket through SSH, or a recording.

Every link offers the same small interface (:class:`console.link.base.Link`), so the app never knows
which one it has; ``console.link.client.AgentClient`` turns it into typed calls.
"""

from console.link.base import Link, LinkError, StreamItem

__all__ = ["Link", "LinkError", "StreamItem"]
