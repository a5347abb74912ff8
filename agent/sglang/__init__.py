"""Everything k25console knows about SGLang's operator surface, for one pinned version.

When SGLang is upgraded, this folder, the patch set and the pins are what change; the contract
tests under ``tests/contract`` show what moved.
"""

SGLANG_VERSION = "0.5.23"
"""The SGLang release every module in this folder describes."""
