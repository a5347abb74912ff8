"""What SGLang 0.5.23's server imports while it starts: the modules a stack must import to serve.

``agent install`` imports each of these in the new stack before it switches to it. A module that
``import sglang`` alone does not reach is only found missing when the server starts, after minutes
of loading (measured on the real engine: ``IPython``, which ``sglang.utils`` imports at start-up,
and ``cutlass``, which nvidia-cutlass-dsl puts on the path through a .pth file and the Llama MLP's
dual GEMM imports while the model is built: "ModuleNotFoundError: No module named 'cutlass'").
"""

from typing import Final

START_UP_IMPORTS: Final = (
    "sglang.srt.entrypoints.http_server",  # what `python -m sglang.launch_server` serves with
    "sglang.utils",  # imports IPython at start-up
    "sgl_kernel",  # sglang-kernel: the CUDA kernels
    "flashinfer",  # attention and sampling kernels
    "cutlass",  # nvidia-cutlass-dsl (its .pth adds dsl_packages to the path)
)

LAUNCHER_MODULE: Final = "sglang.launch_server"
"""``python -m sglang.launch_server``: still supported in 0.5.23 (it warns that ``sglang serve`` is preferred)."""
