"""Zero-step rounds as plain decodes: the hidden-state ring (k25console patch 03).

While a request decodes at 0 steps the draft sees nothing of it. The ring keeps, per request slot,
the target's next token and hidden state of the last few positions (a 0-step round's, and each
extend's last), so that the first drafting round after them can re-extend the draft over what it
missed (``k25_zero_step_catchup``).
"""

from __future__ import annotations

from typing import Any

import torch


class HiddenRing:
    """``(next token, target hidden, position)`` of recent positions, per request slot, by position mod
    width. The position tag says which position an entry holds, so that what a request missed is
    found on the GPU: SGLang's spec v2 path keeps no CPU copy of the sequence lengths under every
    attention backend (triton has none), and reading them back would stall the overlap."""

    def __init__(self, slots: int, width: int, hidden: torch.Tensor, device: Any) -> None:
        self.width = width
        self.tokens = torch.zeros((slots, width), dtype=torch.int32, device=device)
        self.hidden = torch.zeros((slots, width, hidden.shape[-1]), dtype=hidden.dtype, device=device)
        self.tags = torch.full((slots, width), -1, dtype=torch.int64, device=device)
        self._count_host: torch.Tensor | None = None  # held(): a pinned copy of the count, on CUDA
        self._count_copied: torch.cuda.Event | None = None
        self._count_last: int | None = None

    @property
    def slots(self) -> int:
        return int(self.tags.shape[0])

    def held(self) -> int | None:
        """Entries that hold a position (the read-back's ring occupancy), without blocking the stream.

        On CUDA the count is queued into a pinned buffer and read on a later call once its copy has
        run, so this says the count of an earlier call (None before the first has landed); on the CPU
        it is read at once. The ring itself is allocated once, ``slots x width``: this shows how much of
        it the run fills, never more than that.
        """
        if self.tags.device.type != "cuda":
            return int((self.tags >= 0).sum())
        if self._count_copied is not None and self._count_copied.query():
            assert self._count_host is not None
            self._count_last = int(self._count_host[0])
            self._count_copied = None
        if self._count_copied is None:
            if self._count_host is None:
                self._count_host = torch.empty(1, dtype=torch.int64, pin_memory=True)
            self._count_host.copy_((self.tags >= 0).sum().view(1), non_blocking=True)
            self._count_copied = torch.cuda.Event()
            self._count_copied.record()
        return self._count_last

    def put(
        self, slots: torch.Tensor, positions: torch.Tensor, tokens: torch.Tensor, hidden: torch.Tensor
    ) -> None:
        """One flat index and three ``index_copy_`` (a row's slot is unique within a batch)."""
        pos = positions.to(torch.int64)
        flat = slots.to(torch.int64) * self.width + pos % self.width
        self.tokens.view(-1).index_copy_(0, flat, tokens.to(torch.int32))
        self.hidden.view(-1, self.hidden.shape[-1]).index_copy_(0, flat, hidden.to(self.hidden.dtype))
        self.tags.view(-1).index_copy_(0, flat, pos)

    def run_lengths(self, slots: torch.Tensor, seq_lens: torch.Tensor, width: int) -> torch.Tensor:
        """Per row, how many of the positions s-1, s-2, ... (at most ``width``) the ring holds without
        a gap: the tokens a catch-up can re-extend (0: nothing that ends at s-1)."""
        k = torch.arange(1, width + 1, device=seq_lens.device, dtype=torch.int64)
        want = seq_lens.to(torch.int64).unsqueeze(1) - k.unsqueeze(0)  # [bs, width]: s-1, s-2, ...
        rows = slots.to(torch.int64).unsqueeze(1).expand_as(want)
        held = (self.tags[rows, want.clamp(min=0) % self.width] == want) & (want >= 0)
        return held.to(torch.int32).cumprod(dim=1).sum(dim=1).to(torch.int32)

    def gather(
        self, slots: torch.Tensor, start: torch.Tensor, lengths: torch.Tensor, width: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens ``[bs * width]`` and hidden ``[bs * width, H]`` of positions start .. start+length-1,
        zero after each row's length (the rows a draft extend pads, as after a short accept)."""
        col = torch.arange(width, device=start.device, dtype=torch.int64)
        pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0)
        valid = col.unsqueeze(0) < lengths.to(torch.int64).unsqueeze(1)
        rows = slots.to(torch.int64).unsqueeze(1).expand_as(pos)
        cols = pos % self.width
        picked = self.tokens[rows, cols]
        tokens = torch.where(valid, picked, torch.zeros_like(picked))
        hidden = self.hidden[rows, cols] * valid.unsqueeze(-1).to(self.hidden.dtype)
        return tokens.reshape(-1), hidden.reshape(-1, self.hidden.shape[-1])


class LastRows:
    """Each request's last row of an extend, as a device index, without synchronizing the stream.

    ``torch.tensor(lens).to(device)`` copies from pageable memory, which synchronizes the stream: on
    the real engine (2026-12-06) that blocked the scheduler's host for the whole target extend, 0.9-1.4
    ms per prefill at c=16 and most of an 83 ms wave at c=64, where SGLang's own prefill path waits
    for nothing. The rows go through one pinned buffer instead, copied without blocking; an event
    says when the buffer may be written again (one prefill later, the copy has long run).
    """

    def __init__(self) -> None:
        self._host: torch.Tensor | None = None
        self._copied: torch.cuda.Event | None = None

    @property
    def capacity(self) -> int:
        """Rows the pinned buffer holds (it grows to the largest prefill's request count, once)."""
        return 0 if self._host is None else int(self._host.shape[0])

    def of(self, lens: list[int], device: torch.device) -> torch.Tensor:
        last = torch.tensor(lens, dtype=torch.int64).cumsum(0) - 1
        if device.type != "cuda":
            return last.to(device)
        n = len(lens)
        if self._host is None or self._host.shape[0] < n:
            self._host = torch.empty(max(n, 256), dtype=torch.int64, pin_memory=True)
        elif self._copied is not None:
            self._copied.synchronize()
        host = self._host[:n]
        host.copy_(last)
        rows = host.to(device, non_blocking=True)
        self._copied = torch.cuda.Event()
        self._copied.record()
        return rows


def slots_of(batch: Any) -> list[int]:
    """The batch's request slots on the CPU: from the requests themselves, which always know them
    (0.5.23 keeps a request's row in its ``ReqKvInfo``, ``req.kv``, not on the request)."""
    return [int(req.kv.req_pool_idx) for req in batch.reqs]
