"""Our own cost checks: what the agent, the console and the simulated engine spend (CPU, memory,
latency), and whether they hold up over time (the soak, the fault loop). No GPU; see ``bench/README.md``."""
