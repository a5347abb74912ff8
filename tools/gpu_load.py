"""Keep GPU 0 busy with bf16 matrix products for a few seconds, so captures see a loaded GPU."""

import sys
import time

import torch

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 8
# mypy sees torch through the overlay's small stubs (agent/install/overlay/typings/torch), which hold
# only what the overlay uses: randn without dtype, no randn_like, no cuda.synchronize. Should the stub
# gain them, mypy reports these ignores as unused.
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)  # type: ignore[call-arg]  # stub lacks dtype
b = torch.randn_like(a)  # type: ignore[attr-defined]  # not in the overlay's stub
buf = torch.empty(
    40 * 2**30 // 2, dtype=torch.bfloat16, device="cuda:0"
)  # hold 40 GiB so memory.used is real
t = time.time()
while time.time() - t < secs:
    for _ in range(50):
        c = a @ b
    torch.cuda.synchronize()  # type: ignore[attr-defined]  # not in the overlay's stub
