"""The metric names, ``/server_info`` fields and ``/set_internal_state`` keys we use exist in SGLang 0.5.23's source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from sglang_source import declared_metric_names, dict_keys_returned, field_names, subscript_keys_assigned

from agent.sglang import live_control, metrics, server_info

pytestmark = pytest.mark.contract


def _assigned_dict_keys(path: Path, function: str) -> set[str]:
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef) and fn.name == function:
            keys: set[str] = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Dict):
                    keys |= {
                        k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    }
            return keys
    raise AssertionError(function)


def test_metrics_we_read_are_exported(sglang_src: Path) -> None:
    declared = declared_metric_names(sglang_src)
    assert len(declared) > 100  # the reader found the collector's metrics
    missing = [name for name in metrics.READ if metrics.PREFIX + name not in declared]
    assert not missing, f"not exported by SGLang 0.5.23: {missing}"


def test_loads_endpoint_uses_the_underscore_prefix(sglang_src: Path) -> None:
    source = (sglang_src / "srt/entrypoints/v1_loads.py").read_text()
    assert re.search(r'f"' + re.escape(metrics.LOADS_PREFIX) + r"\{", source)
    assert metrics.strip_prefix("sglang_num_running_reqs") == metrics.strip_prefix("sglang:num_running_reqs")


def test_server_args_fields_we_read_exist(sglang_src: Path) -> None:
    fields = field_names(sglang_src)
    missing = [f for f in (*server_info.SERVER_ARGS_READ, "api_key", "admin_api_key") if f not in fields]
    assert not missing, missing


def test_server_info_top_level_fields(sglang_src: Path) -> None:
    http = (sglang_src / "srt/entrypoints/http_server.py").read_text()
    for key in (server_info.VERSION, server_info.INTERNAL_STATES, server_info.STARTUP_TIME):
        assert f'"{key}":' in http, key
    handshake = _assigned_dict_keys(sglang_src / "srt/managers/scheduler.py", "get_init_info")
    assert {server_info.MAX_TOTAL_NUM_TOKENS, server_info.MAX_REQ_INPUT_LEN} <= handshake
    common = (sglang_src / "srt/utils/common.py").read_text()
    assert f'result["{server_info.LAUNCH_COMMAND}"]' in common


def test_internal_state_fields_we_read(sglang_src: Path) -> None:
    """Scheduler (internal_states[i]) keys come from the internal-state controller and build_memory_usage."""
    controller = sglang_src / "srt/managers/scheduler_components/internal_state.py"
    written = subscript_keys_assigned(controller, "state")
    missing = [k for k in server_info.INTERNAL_STATE_READ if k not in written]
    assert not missing, missing
    memory = _assigned_dict_keys(
        sglang_src / "srt/managers/scheduler_components/memory_usage.py", "build_memory_usage"
    )
    assert set(server_info.MEMORY_USAGE_KEYS) <= memory


def test_set_internal_state_keys_are_exactly_sglangs_plus_ours(sglang_src: Path) -> None:
    controller = sglang_src / "srt/managers/scheduler_components/internal_state.py"
    accepted = dict_keys_returned(controller, "_update_handlers")
    assert accepted == set(server_info.SGLANG_SET_INTERNAL_STATE_KEYS)
    assert set(server_info.SET_INTERNAL_STATE_KEYS) == accepted | set(live_control.LIVE_KEYS)
    # our keys must not collide with a real ServerArgs field: SGLang's override() would take them
    assert not set(live_control.LIVE_KEYS) & field_names(sglang_src)
    io_struct = (sglang_src / "srt/managers/io_struct.py").read_text()
    assert re.search(
        rf"{server_info.SET_INTERNAL_STATE_BODY_FIELD}: Dict\[str, Union\[int, float\]\]", io_struct
    )


def test_start_profile_route_and_the_fields_we_send(sglang_src: Path) -> None:
    """``EngineClient.start_profile`` posts these fields to this route (bench/real/trace_rounds.py)."""
    from agent.sglang.paths import START_PROFILE

    http = (sglang_src / "srt/entrypoints/http_server.py").read_text()
    assert f'@app.api_route("{START_PROFILE}"' in http
    io_struct = (sglang_src / "srt/managers/io_struct.py").read_text()
    body = io_struct[io_struct.index("class ProfileReq(") : io_struct.index("class ProfileReqOutput(")]
    for field in ("output_dir", "num_steps", "activities", "with_stack", "record_shapes", "profile_prefix"):
        assert re.search(rf"^\s+{field}: ", body, re.M), field
