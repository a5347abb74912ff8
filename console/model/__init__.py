"""What the console knows, in plain Python: ring buffers of snapshots and events, and the link's state.

No Textual here: the model is filled by the stream worker and read by the screens on their paint
cadence, so a burst of snapshots costs appends, not repaints.
"""

from console.model.history import ConsoleModel, LinkState, LinkStatus
from console.model.marks import SpecSwitch

__all__ = ["ConsoleModel", "LinkState", "LinkStatus", "SpecSwitch"]
