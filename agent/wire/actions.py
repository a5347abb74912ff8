"""The operator actions: one catalogue entry per kind, the one place that says what each one is.

An action is a change an operator asks of the agent (Controls, Profiles, ``agent control``). Each
entry says what its value is and which values it allows, the sentinels that mean something other
than a number (-1 releases the step pin, 0 means no threshold), the profile key it changes, where
the console offers it, and its words: how a plan and the actions log name it, how the confirm asks,
how the audit reads its kind and its values. The planner keeps one rule per kind
(``agent.control.planner.RULES``); the console's Controls fields, confirm titles and action words,
the CLI's choices and the audit's wording are made from these entries, so adding a kind is an entry
here, a rule there and, where SGLang is involved, its key in ``agent.sglang`` (docs/actions.md).

The words are the ones an operator reads everywhere: the step count is "steps", a pinned count is
the number, no pin is "not pinned" (SGLang's policy chooses), a threshold of 0 is "none". No raw
sentinel (-1, 0 for none) and no "unset" is shown for a setting this catalogue knows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

ActionKind = Literal["threshold", "steps", "topk", "adaptive", "apply_profile", "autopilot", "undo"]
ValueType = Literal["count", "switch", "name", "nothing"]
"""What a kind's value is: a whole number, on/off, a profile's name, or no value at all (undo)."""
Place = Literal["input", "select", "toggle", "profiles", "button"]
"""Where the console offers a kind: an input field on Controls, an on/off select there, the
autopilot's own toggle there, the Profiles screen (loading a saved profile), or a button of its own
on Controls (undo)."""

NO_THRESHOLD: Final = 0
"""The threshold that means none: speculate at every batch size (the patch's live value, too)."""
RELEASE_PINNED_STEPS: Final = -1
"""The steps value that releases the pin: SGLang's adaptive policy chooses again (the patch's too)."""
MAX_THRESHOLD: Final = 4096
MAX_STEPS: Final = 16
MAX_TOPK: Final = 16
NAME_MAX: Final = 64
"""The longest profile name (a text value) or operator a request may carry."""
PINNED_KEY: Final = "speculation.pinned_steps"
"""The change a steps action shows: the engine's pinned step count (no pin: SGLang's policy chooses).
A profile cannot say whether its step count is pinned, so plans and the audit name the pin."""


@dataclass(frozen=True)
class Sentinel:
    """A value that is no quantity: what it is typed as, how it reads, how its action is named."""

    value: int
    word: str
    """What an operator types for it (Controls, ``agent control``): "none", "release"."""
    short: str
    """How the value reads where room is short (tables, the audit): "none", "not pinned"."""
    long: str
    """How it reads in a dialog or a plan: "not pinned (SGLang's policy chooses)"."""
    label: str
    """The action that sends it, named: "release the step pin"."""
    confirm: str
    """The confirm's title; ``{on}`` is " on <profile>" or nothing."""
    button: str | None = None
    """A button of its own beside the field on Controls ("Release"), or none."""


@dataclass(frozen=True)
class ActionSpec:
    """One kind of operator action (see the module docstring)."""

    kind: ActionKind
    name: str
    """The setting's name for an operator, the same on every screen, dialog and audit row."""
    key: str
    """The profile key it changes (empty for undo: it changes what the last change changed)."""
    takes: ValueType
    allowed: str
    """What it allows, in words: every refusal ends with it."""
    label: str
    """How a plan and the actions log name it: ``{value}`` is the value in words."""
    confirm: str
    """The confirm's title: ``{value}``, ``{on}`` (" on <profile>") and ``{instead}`` (" in place of <profile>")."""
    audit: str
    """The audit's word for this kind (its "kind" column)."""
    place: Place
    hint: str
    """The empty field's placeholder on Controls, and the CLI's help for the value."""
    low: int | None = None
    high: int | None = None
    sentinels: tuple[Sentinel, ...] = ()
    unset: int | None = None
    """The sentinel an absent value stands for (a profile without a threshold has none)."""
    shown_keys: tuple[str, ...] = ()
    """The keys under which plans, read-backs and audit rows carry this setting's value; the first
    is the key of the change its plans show."""
    confirm_same: str | None = None
    """The confirm's title when the value names what already runs (a profile loaded again)."""

    # -- values --------------------------------------------------------------------------------
    def sentinel(self, value: object) -> Sentinel | None:
        if value is None and self.unset is not None:
            value = self.unset
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return next((s for s in self.sentinels if s.value == value), None)

    def words(self, value: object, *, long: bool = False) -> str:
        """The value as an operator reads it: a sentinel by its words, a switch on/off, else as is."""
        sentinel = self.sentinel(value)
        if sentinel is not None:
            return sentinel.long if long else sentinel.short
        if isinstance(value, bool):
            return "on" if value else "off"
        if self.takes == "nothing":
            return "the last change"
        if value is None:
            return "not set"
        return str(value)

    def action_label(self, value: object) -> str:
        """ "threshold → 64", "release the step pin", "load profile kimi-k25-eagle3"."""
        sentinel = self.sentinel(value)
        if sentinel is not None and value is not None:
            return sentinel.label
        return self.label.format(value=self.words(value))

    def confirm_title(self, value: object, running: str | None = None) -> str:
        """The confirm's question for this value on the profile ``running``."""
        on = f" on {running}" if running else ""
        instead = f" in place of {running}" if running else ""
        sentinel = self.sentinel(value)
        if sentinel is not None and value is not None:
            return sentinel.confirm.format(on=on)
        if self.confirm_same is not None and running is not None and value == running:
            return self.confirm_same.format(value=self.words(value))
        return self.confirm.format(value=self.words(value), on=on, instead=instead)

    # -- checking --------------------------------------------------------------------------------
    def wrong_type(self, value: object) -> str | None:
        """Why ``value`` is no value of this kind at all (the wire's check; the value is not echoed:
        it may be anything a client sent). None when its type fits."""
        if self.takes == "count" and isinstance(value, int) and not isinstance(value, bool):
            return None
        if self.takes == "switch" and isinstance(value, bool):
            return None
        if self.takes == "name" and isinstance(value, str):
            return None
        if self.takes == "nothing":
            return (
                None
                if value is None
                else f"{self.name} takes no value: {self.allowed}; got {_kind_of(value)}"
            )
        what = {"count": "a whole number", "switch": "true or false", "name": "text"}[self.takes]
        api = "".join(f" ({s.word} is sent as {s.value})" for s in self.sentinels)
        return f"{self.name} takes {what}: {self.allowed}{api}; got {_kind_of(value)}"

    def out_of_bounds(self, value: int) -> str | None:
        """Why a whole number is outside what this kind takes at all (before what the server built)."""
        if self.sentinel(value) is not None:
            return None
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return (
                f"{self.name}: {self.words(value)} is outside what it takes; {self.name} takes {self.allowed}"
            )
        return None

    def parse(self, text: str) -> int | bool | str | None:
        """What an operator typed, as this kind's value; ValueError says what is allowed."""
        typed = text.strip()
        if self.takes == "nothing":
            if typed:
                raise ValueError(f"{self.name} takes no value: {self.allowed}")
            return None
        if not typed:
            raise ValueError(f"{self.name} needs a value: {self.allowed}")
        if self.takes == "name":
            if len(typed) > NAME_MAX or not typed.isprintable():
                raise ValueError(f"{self.name}: {self.allowed}, at most {NAME_MAX} printable characters")
            return typed
        lowered = typed.lower()
        if self.takes == "switch":
            if lowered in SWITCH_WORDS:
                return SWITCH_WORDS[lowered]
            raise ValueError(
                f"{self.name}: “{_cut(typed)}” is not on or off; {self.name} takes {self.allowed}"
            )
        for sentinel in self.sentinels:
            if lowered == sentinel.word:
                return sentinel.value
        digits = typed.removeprefix("-")
        if not digits.isascii() or not digits.isdigit():
            raise ValueError(
                f"{self.name}: “{_cut(typed)}” is not a whole number; {self.name} takes {self.allowed}"
            )
        return int(typed)


SWITCH_WORDS: Final = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False}


def _cut(text: str, most: int = 24) -> str:
    """What was typed, quoted back whole when short, else its start (never a value cut into another:
    the ellipsis says it goes on)."""
    return text if len(text) <= most else text[: most - 1] + "…"


def _kind_of(value: object) -> str:
    if value is None:
        return "no value"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a decimal number" if math.isfinite(value) else "not a finite number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a value of another type"


_THRESHOLD_NONE = Sentinel(
    NO_THRESHOLD,
    word="none",
    short="none",
    long="none (speculate at every batch size)",
    label="remove the threshold",
    confirm="Remove the speculation threshold{on} (speculate at every batch size)?",
)
_STEPS_RELEASE = Sentinel(
    RELEASE_PINNED_STEPS,
    word="release",
    short="not pinned",
    long="not pinned (SGLang's policy chooses)",
    label="release the step pin",
    confirm="Release the pinned step count{on} (SGLang's adaptive policy chooses again)?",
    button="Release",
)

CATALOGUE: Final[dict[ActionKind, ActionSpec]] = {
    spec.kind: spec
    for spec in (
        ActionSpec(
            kind="threshold",
            name="threshold",
            key="speculation.threshold",
            takes="count",
            low=NO_THRESHOLD,
            high=MAX_THRESHOLD,
            sentinels=(_THRESHOLD_NONE,),
            unset=NO_THRESHOLD,
            allowed=f"a running batch size from 1 to {MAX_THRESHOLD} at which drafting stops, or none to "
            "speculate at every batch size",
            label="threshold → {value}",
            confirm="Set the speculation threshold to {value}{on}?",
            audit="threshold",
            place="input",
            hint="running batch",
            shown_keys=("speculation.threshold", "threshold"),
        ),
        ActionSpec(
            kind="steps",
            name="steps",
            key="speculation.num_steps",
            takes="count",
            low=1,
            high=MAX_STEPS,
            sentinels=(_STEPS_RELEASE,),
            unset=RELEASE_PINNED_STEPS,
            allowed="a step count built at start-up to pin, or release to let SGLang's policy choose",
            label="steps → {value}",
            confirm="Pin speculation steps at {value}{on}?",
            audit="steps",
            place="input",
            hint="step count",
            shown_keys=(PINNED_KEY, "pinned_steps", "steps"),
        ),
        ActionSpec(
            kind="topk",
            name="topk",
            key="speculation.eagle_topk",
            takes="count",
            low=1,
            high=MAX_TOPK,
            allowed=f"a whole number from 1 to {MAX_TOPK} (it needs a restart)",
            label="topk → {value}",
            confirm="Set topk to {value}{on}?",
            audit="topk",
            place="input",
            hint="restart",
            shown_keys=("speculation.eagle_topk",),
        ),
        ActionSpec(
            kind="adaptive",
            name="adaptive",
            key="speculation.adaptive",
            takes="switch",
            allowed="on or off",
            label="adaptive → {value}",
            confirm="Turn adaptive speculation {value}{on}?",
            audit="adaptive",
            place="select",
            hint="on or off",
            shown_keys=("speculation.adaptive",),
        ),
        ActionSpec(
            kind="apply_profile",
            name="profile",
            key="identity.name",
            takes="name",
            allowed="the name of a saved profile",
            label="load profile {value}",
            confirm="Load profile {value}{instead}?",
            confirm_same="Load profile {value} again from its file, undoing what changed since it was loaded?",
            audit="load profile",
            place="profiles",
            hint="profile name",
        ),
        ActionSpec(
            kind="autopilot",
            name="autopilot",
            key="speculation.autopilot.enabled",
            takes="switch",
            allowed="on or off",
            label="autopilot → {value}",
            confirm="Turn the speculation autopilot {value}{on}?",
            audit="autopilot",
            place="toggle",
            hint="on or off",
            shown_keys=("speculation.autopilot.enabled",),
        ),
        ActionSpec(
            kind="undo",
            name="undo",
            key="",
            takes="nothing",
            allowed="no value: it puts back the value from before the last applied change, as the audit "
            "records it (an undo of an undo applies that change again)",
            label="undo the last change",
            confirm="Undo {value}{on}?",
            audit="undo",
            place="button",
            hint="the last change",
        ),
    )
}
"""Every operator action, by kind, in the order the console and the CLI list them."""

ACTION_KINDS: Final[tuple[ActionKind, ...]] = get_args(ActionKind)

_BY_KEY: Final = {key: spec for spec in CATALOGUE.values() for key in spec.shown_keys}
_BY_KIND: Final[dict[str, ActionSpec]] = {str(kind): spec for kind, spec in CATALOGUE.items()}


def spec_of(kind: str) -> ActionSpec | None:
    """The entry of ``kind``; None for a kind this side does not know (a newer agent's)."""
    return _BY_KIND.get(kind)


def of_kinds(places: Iterable[Place]) -> tuple[ActionSpec, ...]:
    """The entries offered at these places, in catalogue order."""
    wanted = set(places)
    return tuple(spec for spec in CATALOGUE.values() if spec.place in wanted)


def setting_name(key: str) -> str:
    """The operator's name for a setting key a plan, read-back or audit row carries: "steps" for
    ``speculation.pinned_steps``; a key no entry knows is shown as it is."""
    spec = _BY_KEY.get(key)
    return spec.name if spec is not None else key


def setting_words(key: str, value: object, *, long: bool = False) -> str | None:
    """A known setting's value in words ("none", "not pinned", "on"); None for a key no entry knows."""
    spec = _BY_KEY.get(key)
    return spec.words(value, long=long) if spec is not None else None


def said(key: str, value: object) -> tuple[str, str] | None:
    """A known setting's name and value in words (``agent.profile.words.change_words``'s ``known``)."""
    spec = _BY_KEY.get(key)
    return (spec.name, spec.words(value)) if spec is not None else None


def audit_kind_words(kind: str) -> str:
    """The audit's word for a record's kind: an action's from its entry, the agent's own as they are."""
    spec = spec_of(kind)
    return spec.audit if spec is not None else kind


def built_steps_words(prebuilt: Sequence[int]) -> str:
    """The step counts a server built at start-up, one way everywhere: "1, 2, 3" (0, the state with
    no drafting, is said apart by whoever shows it: it is no step count an operator pins)."""
    counts = [s for s in prebuilt if s > 0]
    return ", ".join(map(str, counts)) if counts else "none"
