"""k25console's GPU-host side: the agent daemon, the simulated engine and the SGLang surface.

The console may import only :mod:`agent.wire` (the wire protocol) and :mod:`agent.profile`
(the operator profile schema) from this package; an import-linter contract enforces it.
"""

__version__ = "0.1.0"
