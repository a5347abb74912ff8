"""``agent smoke``: the three-minute check of the real engine an operator runs before loading a 600 GB
model, with tiny local models; its logic runs against the simulated engine in CI."""
