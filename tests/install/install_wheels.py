"""Building small wheels and a PEP 503 package index on disk, for the install tests.

Hand-written rather than through a build backend: a wheel is a zip with METADATA, WHEEL and a RECORD
of sha256 hashes, and writing those directly keeps the tests fast and offline.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import zipfile
from pathlib import Path


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(
    out_dir: Path, name: str, version: str, files: dict[str, bytes], requires: tuple[str, ...] = ()
) -> Path:
    dist = re.sub(r"[-.]+", "_", name)
    dist_info = f"{dist}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    contents = dict(files)
    contents[f"{dist_info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    contents[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: k25-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{path},sha256={_b64_sha256(data)},{len(data)}" for path, data in contents.items()]
    record.append(f"{dist_info}/RECORD,,")
    contents[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def build_index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 simple index under ``root/simple``; returns its ``file://`` URL."""
    simple = root / "simple"
    by_project: dict[str, list[Path]] = {}
    for wheel in wheels:
        by_project.setdefault(normalize(wheel.name.split("-")[0]), []).append(wheel)
    for project, files in by_project.items():
        page = simple / project
        page.mkdir(parents=True, exist_ok=True)
        links = "".join(
            f'<a href="{w.resolve().as_uri()}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
            f"{html.escape(w.name)}</a>\n"
            for w in files
        )
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    projects = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(by_project))
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{projects}</body></html>\n")
    return simple.resolve().as_uri()


STUB_REQUIRES = ("sglang-kernel==0.4.10", "flashinfer-python==0.7.2", "nvidia-cutlass-dsl==4.4.0")
"""What the stand-in sglang wheel requires so that the start-up imports (``agent.sglang.startup``) resolve."""

SGLANG_START_UP_FILES = {
    "sglang/srt/entrypoints/http_server.py": b"import sgl_kernel, flashinfer  # noqa\n",
    "sglang/utils.py": b"",
}
"""The stand-in sglang's modules that the verify step imports beside the patch's."""


def start_up_stub_wheels(out_dir: Path) -> list[Path]:
    """Stand-ins for the GPU wheels the server imports at start-up. ``cutlass`` is reached the way
    nvidia-cutlass-dsl ships it: a ``.pth`` file puts ``nvidia_cutlass_dsl/dsl_packages`` on the path."""
    return [
        build_wheel(out_dir, "sglang-kernel", "0.4.10", {"sgl_kernel/__init__.py": b"KERNELS = 'stub'\n"}),
        build_wheel(
            out_dir, "flashinfer-python", "0.7.2", {"flashinfer/__init__.py": b"__version__ = '0.7.2'\n"}
        ),
        build_wheel(
            out_dir,
            "nvidia-cutlass-dsl",
            "4.4.0",
            {
                "nvidia_cutlass_dsl.pth": b"nvidia_cutlass_dsl/dsl_packages\n",
                "nvidia_cutlass_dsl/__init__.py": b"",
                "nvidia_cutlass_dsl/dsl_packages/cutlass/__init__.py": b"DSL = True\n",
            },
        ),
    ]
