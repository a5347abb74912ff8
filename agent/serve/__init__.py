"""``agent serve``: the daemon that ties the engine supervisor, telemetry, control and the HTTP API together."""
