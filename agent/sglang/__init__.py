"""Everything k25console knows about SGLang's operator surface, for one pinned version.

When SGLang is upgraded, this folder, the patch set and the pins are what change; the contract
tests under ``tests/contract`` show what moved.

* ``kv``: KV allocation per decode step, the reserve, page alignment, pool estimate, what-ifs.
* ``launch``: profile → launch argv, environment, adaptive config file, private key config file.
* ``adaptive``: the adaptive speculation config JSON (threshold = a 0-step slot).
* ``rules`` (+ ``flag_tables``): what SGLang refuses or silently changes; live vs restart;
  live-value validation.
* ``metrics`` / ``server_info``: the metric names and JSON fields we read, the keys we write.
* ``metric_fields`` / ``exposition`` / ``histogram`` / ``reading``: the one ``/metrics`` reader
  (field table with older aliases, the page scanner, histograms and quantiles, the rules).
* ``info_view``: ``/server_info`` as a typed view (version differences handled there).
* ``client``: ``EngineClient``, the one client of a running SGLang (telemetry, control, bench).
* ``redact``: secrets out of ``/server_info``, launch commands and log lines, by key name.
* ``cli_flags`` (+ ``cli_flags.json``) / ``extra_flags``: the launcher's flags, for checking extra flags.
* ``live_control``: the two keys k25console's patch adds to ``/set_internal_state``.
* ``live_state``: what a server was built with apart from its live values (relaunch, restore).
"""

SGLANG_VERSION = "0.5.23"
"""The SGLang release every module in this folder describes."""
