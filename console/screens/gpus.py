"""GPUs: one row per device, updated cell by cell, with a short utilization history."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import DataTable, Static

from agent.wire import Gpu, Snapshot
from console.model import ConsoleModel
from console.screens.base import LiveScreen
from console.widgets.format import DASH, gib, num, sparkline, throttle

HISTORY = 12
"""Samples in the history column: short enough that every column fits 100 columns."""
HISTORY_FROM_WIDTH = 100
"""Below this many columns the history gives way, so that every other column (throttle, the one an
operator looks for when clocks drop) is in view without scrolling; util keeps the current value."""

COLUMNS: tuple[tuple[str, str, Callable[[Gpu], str]], ...] = (
    ("name", "name", lambda g: (g.name or DASH).replace("NVIDIA ", "")[:22]),
    ("util", "util", lambda g: num(g.utilization_pct, ".0f", "%")),
    ("mem", "memory", lambda g: f"{gib(g.memory_used_bytes)}/{gib(g.memory_total_bytes)}"),
    ("power", "power/limit", lambda g: f"{num(g.power_w)}/{num(g.power_limit_w, unit='W')}"),
    ("temp", "temp", lambda g: num(g.temperature_c, unit="°C")),
    ("clocks", "SM/mem MHz", lambda g: f"{num(g.sm_clock_mhz)}/{num(g.mem_clock_mhz)}"),
    (
        "pcie",
        "PCIe",
        lambda g: f"Gen{num(g.pcie_gen)}x{num(g.pcie_width)}" if g.pcie_gen is not None else DASH,
    ),
    ("throttle", "throttle", lambda g: throttle(g.throttle_reasons)),
)


def utilization_history(model: ConsoleModel, index: int) -> list[float | None]:
    recent: list[Snapshot] = list(islice(reversed(model.snapshots), HISTORY))
    values: list[float | None] = []
    for snap in reversed(recent):
        gpu = next((g for g in snap.gpus.devices if g.index == index), None)
        values.append(gpu.utilization_pct if gpu else None)
    return values


class GpusScreen(LiveScreen):
    def compose_body(self) -> ComposeResult:
        yield Static(id="gpu-source", classes="value")
        table: DataTable[str] = DataTable(id="gpu-table", cursor_type="row", zebra_stripes=True)
        yield table

    def on_resize(self, event: Resize) -> None:
        """Across HISTORY_FROM_WIDTH the history column comes or goes: draw the table again."""
        table = self.query_one_optional(DataTable)
        if table is not None and table.columns and self._history_fits() != ("history" in table.columns):
            self.repaint()

    def _history_fits(self) -> bool:
        return self.size.width >= HISTORY_FROM_WIDTH

    def _ensure_columns(self, table: DataTable[str], named: bool) -> None:
        """Columns are added on the first paint (a paint may come before this screen's mount
        handler); ``named``: the GPUs differ, so each row says which it is (else the source line);
        the history only where it fits beside every other column."""
        history = self._history_fits()
        if table.columns and ("name" in table.columns) == named and ("history" in table.columns) == history:
            return
        table.clear(columns=True)
        table.add_column("GPU", key="index")
        for key, label, _ in COLUMNS[:2]:
            if key != "name" or named:
                table.add_column(label, key=key)
        if history:
            table.add_column("history", key="history")
        for key, label, _ in COLUMNS[2:]:
            table.add_column(label, key=key)

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            return
        gpus = snap.gpus
        names = {(g.name or DASH).replace("NVIDIA ", "") for g in gpus.devices}
        one_kind = len(names) == 1
        kind = f"{len(gpus.devices)} × {next(iter(names))}, " if one_kind and gpus.devices else ""
        source = f"{kind}source {gpus.source}, driver {gpus.driver_version or DASH}, CUDA {gpus.cuda_driver_version or DASH}"
        if gpus.state != "ok":
            source = f"no GPU telemetry: {gpus.detail or gpus.state}  ({source})"
        self.query_one("#gpu-source", Static).update(source)
        table: DataTable[str] = self.query_one(DataTable)
        self._ensure_columns(table, named=not one_kind)
        seen: set[str] = set()
        for gpu in gpus.devices:
            key = str(gpu.index)
            seen.add(key)
            cells = {k: render(gpu) for k, _, render in COLUMNS if k in table.columns}
            if "history" in table.columns:
                cells["history"] = sparkline(utilization_history(model, gpu.index), 100.0)
            if key not in table.rows:
                table.add_row(
                    key, *(cells[str(c.key.value)] for c in list(table.columns.values())[1:]), key=key
                )
                continue
            for column, value in cells.items():
                if table.get_cell(key, column) != value:
                    table.update_cell(key, column, value)
        for gone in [str(k.value) for k in table.rows if str(k.value) not in seen]:
            table.remove_row(gone)
