"""The parts the bench scripts share, never run on their own: the agent's API over its socket as an
operator uses it (``agent_api``), ``agent sim`` in a subprocess on a free port (``sim_process``)."""
