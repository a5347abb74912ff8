"""The overlay's torch-side tests, a package: its modules import each other relatively, so that
``bench/real/zero_step_preflight.py`` can import it from its folder on the GPU host (where pytest is
absent) under a name of its own, and run the same tests (``conftest.py`` says how)."""
