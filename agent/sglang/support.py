"""Whether SGLang 0.5.23 runs adaptive speculation for a profile, and whether the live threshold can act.

Apart from ``rules`` because the KV rule (``kv``) and the env switch (``spec_env``) need the same
answers, and ``rules`` imports both of them.
"""

from __future__ import annotations

from agent.profile.schema import Profile
from agent.sglang import adaptive
from agent.sglang.extra_flags import first_value, has_flag


def adaptive_unsupported_reason(profile: Profile) -> str | None:
    """Why SGLang 0.5.23 would turn adaptive speculation off for this profile, in its own words; None if it would not.

    Mirrors ``adaptive_unsupported_reason`` (``srt/speculative/adaptive_spec_params.py``); SGLang logs
    ``speculative_adaptive disabled: <reason>`` and falls back to static speculation. The
    out-of-tree-platform reason cannot arise on CUDA.
    """
    spec = profile.speculation
    flags = profile.server.extra_flags
    if not profile.speculative:
        return "speculative_algorithm=None (only EAGLE/EAGLE3 are supported)"
    if spec.eagle_topk is not None and spec.eagle_topk != 1:
        return f"speculative_eagle_topk={spec.eagle_topk} (only topk=1 is supported)"
    attn_dp = first_value(flags, "--attn-dp-size")
    if (attn_dp is not None and attn_dp.isdigit() and int(attn_dp) > 1) or has_flag(
        flags, "--enable-dp-attention"
    ):
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if has_flag(flags, "--enable-multi-layer-eagle"):
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if has_flag(flags, "--enable-two-batch-overlap"):
        return (
            "enable_two_batch_overlap=True is not supported "
            "(adaptive state swap would discard the TboAttnBackend wrapper)"
        )
    if has_flag(flags, "--enable-pdmux"):
        return "enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)"
    return None


def adaptive_active(profile: Profile) -> bool:
    """Whether SGLang will really run adaptive speculation for this profile (asked for and supported)."""
    return (
        profile.speculative and profile.speculation.adaptive and adaptive_unsupported_reason(profile) is None
    )


def prebuilt_steps(profile: Profile) -> list[int]:
    """Step counts SGLang builds runtime states for at start-up (adaptive); empty when adaptive is not active."""
    if not adaptive_active(profile):
        return []
    try:
        config = adaptive.adaptive_config(profile)
    except ValueError:
        return []
    return adaptive.candidate_steps(config) if config is not None else []


def threshold_unavailable_reason(profile: Profile) -> str | None:
    """Why the live speculation threshold cannot work for this profile, in an operator's words; None if it can."""
    if not profile.speculative:
        return "speculation is off (speculation.algorithm = 'none')"
    reason = adaptive_unsupported_reason(profile)
    if reason is not None:
        return f"SGLang 0.5.23's adaptive mode does not support this configuration: {reason}"
    if not profile.speculation.adaptive:
        return "speculation.adaptive is false; the threshold is carried by SGLang's adaptive mode"
    return None
