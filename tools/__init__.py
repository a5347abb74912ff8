"""Scripts run by hand on a GPU host to make the test fixtures (``tools/README.md``).

A package so that mypy checks them as ``tools.gpu_capture`` and ``tools.gpu_load``, as it does
``bench``; they still run as files (``python tools/gpu_capture.py``). Nothing imports them: each does
its work when it starts.
"""
