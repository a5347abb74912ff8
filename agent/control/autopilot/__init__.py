"""The speculation autopilot: keeps the live threshold, and the step count below it, at the crossover it
measures from live telemetry (issue 16).

* ``sample``: what one Snapshot tells it (pure);
* ``estimator``: tokens/s per running batch, at each step count and without drafting (pure);
* ``policy``: which setting delivers the most on recent traffic, and where the crossover lies (pure);
* ``pilot``: the state machine: moves, probes, hysteresis, move bounds, reverts (pure);
* ``runner``: the pilot in the daemon: live changes through the engine client, events, audit lines;
* ``offline``: the pilot against the engine model on its virtual clock (``bench/studies/autopilot.py``);
* ``metrics``: its ``k25_autopilot_*`` series for the exporter.
"""
