"""The GPU runs' operations: what travels to a lent GPU host, the session's stages (``gpu.sh``) and
their rehearsal here, and the scripts they run on the live engine. ``bench/real/README.md`` tells the
sessions; their results are in ``bench/results/``. Imports nothing: ``zero_step_preflight`` runs under
the stack's python, which has torch and no agent."""
