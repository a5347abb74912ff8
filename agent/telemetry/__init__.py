"""Telemetry on the GPU host: NVML, SGLang's /metrics and /server_info, snapshots and the ring buffer.

Knows how to read numbers and turn them into wire models; knows nothing of how they are drawn, and
nothing of SGLang's surface beyond what ``agent.sglang`` gives it. A tick goes through three rooms:
``engine_reader`` (every request to the engine), ``window`` (counters and histograms over time, pure)
and ``derive``/``derive_spec`` (the Snapshot's parts, pure); ``collector`` wires them together.
"""
