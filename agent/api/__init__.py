"""The agent's HTTP API (FastAPI): thin routes over the daemon's parts, bearer-token auth, SSE stream."""
