"""SGLang 0.5.23's speculation rules, applied to a profile before anything runs.

Each rule names the SGLang source it mirrors. The profile schema (``agent.profile.schema``) already
refuses what is wrong in any SGLang version (types, ranges, unknown keys); this module adds what 0.5.23
itself does with the values: what it refuses at start-up (an error here), and what it silently changes or
where it silently loses something (a warning here).

It also decides, for a change from profile A to profile B, whether the running server can take it live
(through the ``/set_internal_state`` keys our patch adds) or needs a restart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from agent.profile.schema import Profile
from agent.profile.store import ProfileIssue, diff_profiles
from agent.profile.words import given_words, value_words
from agent.sglang import adaptive, live_control, redact, spec_env
from agent.sglang.cli_flags import extra_flag_problems
from agent.sglang.extra_flags import flag_names, has_flag
from agent.sglang.flag_tables import (
    IMPLICIT_MAX_RUNNING_REQUESTS,
    PAGE_TREE_SPEC_BACKENDS,
    RENAMED_FLAGS,
    RENDERED_FLAGS,
    SM120_FAILING_BACKENDS,
    SM120_FAILING_FLAGS,
)
from agent.sglang.support import (
    adaptive_unsupported_reason,
    prebuilt_steps,
    threshold_unavailable_reason,
)
from agent.wire import actions

# --- Profile checks ------------------------------------------------------------------------------


class _Report:
    """Collects the issues of one profile file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.issues: list[ProfileIssue] = []

    def error(self, key: str, rule: str) -> None:
        self.issues.append(ProfileIssue(file=self.file, key=key, rule=rule, severity="error"))

    def warning(self, key: str, rule: str) -> None:
        self.issues.append(ProfileIssue(file=self.file, key=key, rule=rule, severity="warning"))


def _check_extra_flags(profile: Profile, report: _Report) -> None:
    """Extra flags must be 0.5.23 flags, must not fight the profile's keys, and must not carry secrets."""
    flags = profile.server.extra_flags
    for name in flag_names(flags):
        if name in ("--api-key", "--admin-api-key"):
            report.error(
                "server.extra_flags",
                f"{name} would put the key on the command line (visible in /proc); "
                "use server.api_key_file / server.admin_api_key_file",
            )
        elif name in RENDERED_FLAGS:
            why = f"{name} is rendered from {RENDERED_FLAGS[name]}; set it there instead"
            report.error("server.extra_flags", why)
    for problem in extra_flag_problems(flags):
        hint = RENAMED_FLAGS.get(problem.split(" ", 1)[0])
        report.error("server.extra_flags", f"{problem}; {hint}" if hint else problem)
    if has_flag(flags, "--speculative-use-rejection-sampling") and (profile.speculation.eagle_topk or 1) != 1:
        why = "--speculative-use-rejection-sampling requires speculation.eagle_topk = 1"
        report.error("server.extra_flags", why)


def _check_sm120(profile: Profile, report: _Report) -> None:
    """Settings SGLang 0.5.23 refuses at start-up on SM120 (RTX PRO 6000 Blackwell)."""
    if profile.stack.gpus.compute_capability.split(".")[0] != "12":
        return
    for name in flag_names(profile.server.extra_flags):
        if name in SM120_FAILING_FLAGS:
            report.error("server.extra_flags", f"{name}: {SM120_FAILING_FLAGS[name]}")
    backend = profile.server.attention_backend
    if backend in SM120_FAILING_BACKENDS:
        report.error(
            "server.attention_backend", f"{backend!r} fails on SM120 GPUs: {SM120_FAILING_BACKENDS[backend]}"
        )


def _check_server(profile: Profile, report: _Report) -> None:
    server = profile.server
    if not server.enable_metrics:
        report.warning(
            "server.enable_metrics",
            "k25console always launches SGLang with --enable-metrics (its telemetry reads /metrics); false is ignored",
        )
    if not profile.speculative:
        return
    if profile.model.draft_path is None:
        report.error(
            "model.draft_path",
            "EAGLE3 needs the draft model's path: SGLang 0.5.23 fills it in only for DeepSeek/GLM-style "
            "MTP checkpoints, not for Kimi K2.5",
        )
    if server.max_running_requests is None:
        report.warning(
            "server.max_running_requests",
            f"unset: SGLang 0.5.23 silently caps running requests at {IMPLICIT_MAX_RUNNING_REQUESTS} "
            "with EAGLE speculation; set it explicitly",
        )
    elif server.cuda_graph_max_bs is not None and server.cuda_graph_max_bs < server.max_running_requests:
        report.warning(
            "server.cuda_graph_max_bs",
            f"{server.cuda_graph_max_bs} is below server.max_running_requests ({server.max_running_requests}): "
            "decode batches larger than it run without CUDA graphs",
        )


def _check_shape(profile: Profile, report: _Report) -> None:
    """topk / steps / draft tokens and page size (speculative_hook.py: _handle_eagle_family)."""
    spec, server = profile.speculation, profile.server
    steps, topk = spec.num_steps or 1, spec.eagle_topk or 1
    # In adaptive mode the draft width always follows the active tier (steps + 1); no warning there.
    forced = topk == 1 and not spec.adaptive and spec.num_draft_tokens not in (None, steps + 1)
    if forced:
        report.warning(
            "speculation.num_draft_tokens",
            f"{spec.num_draft_tokens} is replaced by SGLang 0.5.23 with num_steps + 1 = {steps + 1} "
            "when eagle_topk is 1",
        )
    if topk == 1:
        return
    backend = server.attention_backend
    if server.page_size > 1 and backend is None:
        report.warning(
            "server.attention_backend",
            f"unset with eagle_topk > 1 and page_size > 1: SGLang accepts only {', '.join(PAGE_TREE_SPEC_BACKENDS)} "
            "here and picks the backend itself (triton on SM120 for an MLA model); set it explicitly",
        )
    elif server.page_size > 1 and backend not in PAGE_TREE_SPEC_BACKENDS:
        report.error(
            "server.attention_backend",
            f"{backend!r} with eagle_topk > 1 and page_size > 1 is refused by SGLang 0.5.23; "
            f"use one of {', '.join(PAGE_TREE_SPEC_BACKENDS)} or page_size 1",
        )
    if backend == "trtllm_mha":
        report.error(
            "speculation.eagle_topk", "trtllm_mha supports only eagle_topk = 1 for speculative decoding"
        )
    if backend == "flashinfer":
        report.warning(
            "speculation.eagle_topk",
            "FlashInfer's MLA backend supports only eagle_topk = 1 for speculative decoding; "
            "an MLA model such as Kimi K2.5 fails with flashinfer and topk > 1",
        )


def _check_live_controls(profile: Profile, report: _Report) -> None:
    """Adaptive mode, the threshold and the live steps (adaptive_spec_params.py, speculative_hook.py)."""
    spec = profile.speculation
    if not profile.speculative:
        for key in ("threshold", "live_steps"):
            if getattr(spec, key):
                report.error(
                    f"speculation.{key}", "has no effect without speculation (speculation.algorithm = 'none')"
                )
        return
    unsupported = adaptive_unsupported_reason(profile)
    if spec.adaptive and unsupported is not None:
        report.error(
            "speculation.adaptive",
            f"SGLang 0.5.23 would turn adaptive mode off at start-up ({unsupported}) "
            "and the threshold and live steps would do nothing",
        )
        return
    unavailable = threshold_unavailable_reason(profile)
    if unavailable is not None:
        key = "speculation.eagle_topk" if (spec.eagle_topk or 1) != 1 else "speculation.adaptive"
        report.warning(key, f"the live speculation threshold and step control are unavailable: {unavailable}")
        for k in ("threshold", "live_steps"):
            if getattr(spec, k):
                report.error(f"speculation.{k}", f"has no effect: {unavailable}")
        return
    if spec.threshold is not None and spec.threshold < 2:
        report.error(
            "speculation.threshold",
            "must be at least 2: at 1 every batch would decode without speculation and the "
            "speculating states would never be built (use speculation.algorithm = 'none' instead)",
        )
    choices = adaptive.live_step_choices(spec)
    if spec.num_steps is not None and spec.num_steps not in choices:
        report.error(
            "speculation.num_steps",
            f"{spec.num_steps} is not among speculation.live_steps ({value_words(choices)}); SGLang 0.5.23 "
            "refuses to start when --speculative-num-steps is not in the adaptive candidate steps",
        )
    if len(choices) > 1 and profile.server.mem_fraction_static is None:
        report.warning(
            "server.mem_fraction_static",
            f"unset with {len(choices)} live step counts: SGLang captures CUDA graphs for each of them at "
            "start-up and its default memory fraction does not budget for the extra sets; set it explicitly",
        )
    if spec.threshold is None and spec.autopilot.enabled:  # a live 0 is fine: its launch kept one
        report.error("speculation.autopilot.enabled", "the autopilot moves the live threshold: it needs a "
                     "threshold at launch (so that SGLang builds its 0-step state)")  # fmt: skip
    elif spec.threshold is None:
        report.warning(
            "speculation.threshold",
            "unset: the 0-step state is not built at start-up, so a threshold cannot be set live later "
            "without a restart",
        )
    elif has_flag(profile.server.extra_flags, "--cuda-graph-bs-decode"):
        report.warning(
            "speculation.threshold",
            "with --cuda-graph-bs-decode in server.extra_flags SGLang routes a batch by its size padded up "
            "to the next captured CUDA-graph size, so smaller batches than the threshold may already "
            "decode without speculation",
        )


def check_profile(profile: Profile, file: str = "<profile>") -> list[ProfileIssue]:
    """Every SGLang 0.5.23 rule the profile breaks (severity ``error``) or trips silently (``warning``)."""
    report = _Report(file)
    _check_extra_flags(profile, report)
    _check_sm120(profile, report)
    _check_server(profile, report)
    if profile.speculative:
        _check_shape(profile, report)
    _check_live_controls(profile, report)
    found = [
        *spec_env.check(profile),
        *redact.profile_secret_warnings(profile.server.env, profile.server.extra_flags),
    ]
    for severity, key, rule in found:
        (report.error if severity == "error" else report.warning)(key, rule)
    return report.issues


def errors_of(issues: list[ProfileIssue]) -> list[ProfileIssue]:
    return [i for i in issues if i.severity == "error"]


# --- Live or restart -----------------------------------------------------------------------------

ChangeMode = Literal["live", "restart", "noop"]


@dataclass(frozen=True)
class ChangePlan:
    """How a change from one profile to another reaches the running server."""

    mode: ChangeMode
    reasons: list[str] = field(default_factory=list)


NO_SERVER_EFFECT_PREFIXES = ("identity.", "telemetry.", "bench.", "health.", "speculation.autopilot.")
"""Keys the agent and console apply themselves; SGLang never sees them."""

_RESTART_WHY: tuple[tuple[str, str], ...] = (
    ("speculation.eagle_topk", "the draft tree's width (topk) is fixed when SGLang starts"),
    (
        "speculation.live_steps",
        "the step counts to choose from are built (CUDA graphs included) when SGLang starts",
    ),
    ("speculation.num_draft_tokens", "the draft token count sizes SGLang's buffers when it starts"),
    ("speculation.algorithm", "turning speculation on or off loads or drops the draft model"),
    ("speculation.adaptive", "adaptive mode is chosen when SGLang starts"),
    ("speculation.ema_alpha", "the adaptive config file is read once, when SGLang starts"),
    ("speculation.update_interval", "the adaptive config file is read once, when SGLang starts"),
    ("speculation.warmup_batches", "the adaptive config file is read once, when SGLang starts"),
    (spec_env.SKIP_ZERO_STEP_KEY, spec_env.RESTART_REASON),
    ("server.page_size", "the page size fixes the KV cache layout when SGLang starts"),
    ("server.env", "the environment of a process is set when it starts"),
    ("server.", "it is a launch setting of SGLang and applies at the next start"),
    ("model.", "the model is loaded when SGLang starts"),
    ("stack.", "the SGLang stack is installed and started as a whole"),
    ("host.", "it is a different machine"),
)


def _restart_reason(key: str) -> str:
    for prefix, why in _RESTART_WHY:
        if prefix.endswith("."):
            if key.startswith(prefix):
                return why
        elif key == prefix or key.startswith(prefix + "."):
            return why
    return "it is read when SGLang starts"


def change_words(key: str, old: object, new: object) -> str:
    """ "threshold 143 → 64", "speculation.num_steps 3 → 2": a setting the action catalogue knows by
    its operator's name and words (``agent.wire.actions``), any other key as it is."""
    was = actions.setting_words(key, old)
    now = actions.setting_words(key, new)
    return (
        f"{actions.setting_name(key)} {was if was is not None else value_words(old)} → "
        f"{now if now is not None else value_words(new)}"
    )


def classify_change(old: Profile, new: Profile, built_with: Profile | None = None) -> ChangePlan:
    """Live (threshold; steps among the states built at start-up), restart (everything else), or noop.

    ``old`` is the profile the server runs, live values included; ``built_with`` the one it was
    launched with (``old`` when none is given), which alone says what states it has. Reasons are
    written for the operator.
    """
    changes = diff_profiles(old, new)
    if not changes:
        return ChangePlan("noop", ["nothing changed"])
    launch = built_with or old
    built = [s for s in prebuilt_steps(launch) if s > 0]
    zero_built = 0 in prebuilt_steps(launch)
    live: list[str] = []
    restart: list[str] = []
    quiet: list[str] = []
    for change in changes:
        shown_old, shown_new = (redact.redact_change(change.key, v) for v in (change.old, change.new))
        what = change_words(change.key, shown_old, shown_new)  # secrets hidden, known settings in words
        if change.key.startswith(NO_SERVER_EFFECT_PREFIXES):
            quiet.append(f"{what}: applied by k25console, SGLang is not touched")
        elif change.key == "speculation.threshold":
            unavailable = threshold_unavailable_reason(launch)
            if unavailable is not None:
                restart.append(
                    f"{what}: needs a restart, the running server has no live threshold ({unavailable})"
                )
            elif change.new is not None and not zero_built:
                restart.append(
                    f"{what}: needs a restart, the running server was started without a threshold, "
                    "so its 0-step state was not built"
                )
            else:
                live.append(f"{what}: applied live, the server keeps serving")
        elif change.key == "speculation.num_steps":
            if isinstance(change.new, int) and change.new in built:
                live.append(
                    f"{what}: applied live, {change.new} steps were built at start-up "
                    f"(built steps: {actions.built_steps_words(built)})"
                )
            elif built:
                restart.append(
                    f"{what}: needs a restart, only {value_words(built)} steps were built at start-up and can be chosen live"
                )
            else:
                restart.append(f"{what}: needs a restart, the running server has no live step control")
        else:
            restart.append(f"{what}: needs a restart, {_restart_reason(change.key)}")
    if restart:
        return ChangePlan("restart", restart + live + quiet)
    if live:
        return ChangePlan("live", live + quiet)
    return ChangePlan("noop", quiet)


# --- Validating a single live value --------------------------------------------------------------

MAX_THRESHOLD = actions.MAX_THRESHOLD

_LIVE_FIELD = {
    live_control.LIVE_THRESHOLD_KEY: "speculation.threshold",
    "speculation.threshold": "speculation.threshold",
    "threshold": "speculation.threshold",
    live_control.LIVE_STEPS_KEY: "speculation.num_steps",
    "speculation.num_steps": "speculation.num_steps",
    "num_steps": "speculation.num_steps",
}


def validate_live_value(profile: Profile, key: str, value: object) -> str | None:
    """Why ``value`` for ``key`` cannot be applied live to a server running ``profile``; None when it can.

    ``key`` is a live-control key (``live_control.LIVE_KEYS``) or the profile field it drives
    (``speculation.threshold``, ``speculation.num_steps``). The reason names the profile field.
    Validation uses only the profile, never rank-local state, so every TP rank would agree.
    """
    field_name = _LIVE_FIELD.get(key)
    if field_name is None:
        allowed = ", ".join(
            sorted({*live_control.LIVE_KEYS, "speculation.threshold", "speculation.num_steps"})
        )
        return f"{key}: not a live setting (live settings: {allowed})"
    unavailable = threshold_unavailable_reason(profile)
    if unavailable is not None:
        return f"{field_name}: live control is unavailable for this server: {unavailable}"
    if not isinstance(value, int) or isinstance(value, bool):
        return f"{field_name}: must be a whole number (got {given_words(value)})"
    built = prebuilt_steps(profile)
    if field_name == "speculation.threshold":
        if not live_control.NO_THRESHOLD <= value <= MAX_THRESHOLD:
            return (
                f"{field_name}: must be between 1 and {MAX_THRESHOLD} running requests, "
                f"or {live_control.NO_THRESHOLD} for no threshold (got {value})"
            )
        if value != live_control.NO_THRESHOLD and 0 not in built:
            return (
                f"{field_name}: the server was started without a threshold, so its 0-step state was not built; "
                "set a threshold in the profile and restart"
            )
        return None
    speculating = [s for s in built if s > 0]
    if value == live_control.RELEASE_PINNED_STEPS:
        return None
    if value not in speculating:
        return (
            f"{field_name}: {value} steps was not built at start-up; built steps: "
            f"{actions.built_steps_words(speculating)}; pin one of them or release the pin"
        )
    return None
