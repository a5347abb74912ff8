"""Everything k25console knows about SGLang's operator surface, for one pinned version.

When SGLang is upgraded, this folder, the patch set and the pins are what change; the contract
tests under ``tests/contract`` show what moved.

* ``kv``: KV allocation per decode step, the reserve, page alignment, pool estimate, what-ifs.
* ``launch``: profile → launch argv, environment, adaptive config file, private key config file.
* ``adaptive``: the adaptive speculation config JSON (threshold = a 0-step slot).
* ``rules``: what SGLang refuses or silently changes; live vs restart; live-value validation.
* ``metrics`` / ``server_info``: the metric names and JSON fields we read, the keys we write.
* ``cli_flags`` (+ ``cli_flags.json``) / ``extra_flags``: the launcher's flags, for checking extra flags.
* ``live_control``: the two keys k25console's patch adds to ``/set_internal_state``.
"""

SGLANG_VERSION = "0.5.23"
"""The SGLang release every module in this folder describes."""
