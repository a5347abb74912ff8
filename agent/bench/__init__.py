"""Benchmarks: closed-loop concurrency sweeps against an SGLang HTTP server, the speculation
on/off/adaptive comparison, and the recommended speculation threshold derived from it.

This package speaks only SGLang's HTTP surface (a real SGLang 0.5.23 or the simulated engine) and
knows nothing of FastAPI or the console: the daemon wires :mod:`agent.bench.runner` into routes.
"""
