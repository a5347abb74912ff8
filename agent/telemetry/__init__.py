"""Telemetry on the GPU host: NVML, SGLang's /metrics and /server_info, snapshots and the ring buffer.

Knows how to read numbers and turn them into wire models; knows nothing of how they are drawn.
"""
