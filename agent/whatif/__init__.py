"""What-ifs on the engine model: the agent's own parts (the autopilot, its telemetry) run against the
simulated engine on its virtual clock.

A part of its own, above both the control code and the simulator, so that neither imports the other:
control steers an engine it reaches through the API, the simulator models one, and only here do they meet.
"""
