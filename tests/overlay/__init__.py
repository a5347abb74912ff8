"""The overlay's torch-side checks under pytest (``conftest.py`` says how they run)."""
