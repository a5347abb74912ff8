"""Running the agent as a systemd service: the unit it needs, written and removed safely."""
