"""The torch, CUDA and SGLang versions a stack's own python imports, for a result's record.

The stack's manifest lists the distributions in the venv's own site-packages; a stack built with
``--system-site-packages`` (the GPU host's) imports torch from the image instead, so the manifest's
torch can name another build than the engine runs (issue 46: a result read torch 2.11.0 where the
engines ran 2.14.1+cu130). So the versions are asked of the stack's python itself: the distribution
versions its ``importlib.metadata`` finds first (what ``import`` finds), and torch's CUDA from torch's
own ``version.py``, read as a file so that nothing initializes CUDA or imports SGLang (seconds, not a
minute, on a GPU host).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 4096

_PROBE = r"""
import json, importlib.metadata as md, importlib.util, pathlib, re
def version(name):
    try:
        return md.version(name)
    except Exception:
        return None
cuda = None
spec = importlib.util.find_spec("torch")
if spec is not None and spec.origin:
    try:
        text = (pathlib.Path(spec.origin).parent / "version.py").read_text()
        found = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        cuda = found.group(1) if found else None
    except OSError:
        pass
print(json.dumps({"torch": version("torch"), "torch_cuda": cuda, "sglang": version("sglang")}))
"""


@dataclass(frozen=True)
class StackVersions:
    torch: str | None
    torch_cuda: str | None
    """The CUDA runtime torch was built for (``torch.version.cuda``); None for a CPU build."""
    sglang: str | None


def probe(python: Path, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[StackVersions | None, str | None]:
    """The versions ``python`` imports, or None and why they could not be read (argv only, bounded)."""
    if not python.is_file():
        return None, f"{python} does not exist"
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", _PROBE], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} could not be asked for its versions ({type(exc).__name__})"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or len(done.stdout) > MAX_ANSWER_BYTES:
        return None, f"{python} did not say its versions (exit {done.returncode})"
    try:
        raw = json.loads(lines[-1])
    except ValueError:
        return None, f"{python} did not say its versions (its answer is no JSON)"
    if not isinstance(raw, dict):
        return None, f"{python} did not say its versions (its answer is no JSON object)"
    values = {
        k: raw.get(k) if isinstance(raw.get(k), str) else None for k in ("torch", "torch_cuda", "sglang")
    }
    return StackVersions(**values), None
