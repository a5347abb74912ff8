"""Engine supervision: start, watch, drain, stop and reattach to the SGLang (or simulated) server."""
