"""Redaction by key, not by word: secrets in every quoting style go, numeric "token" settings stay."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent.sglang.redact import REDACTED, is_secret_name, redact_lines, redact_mapping, redact_text

REPRO = Path(__file__).resolve().parents[1] / "fixtures" / "repro"
LOG = (REPRO / "secrets-log.txt").read_text().splitlines()
INFO = json.loads((REPRO / "secrets-server-info.json").read_text())
LOG_SECRETS = ["sk-repr-1111", "adm-repr-2222", "sk-flag-3333", "adm-flag-4444", "hf_flag 5555", "5555",
               "sk-json-6666", "adm-dict-7777", "hf_env_8888", "sk-export-9999", "sk-bearer-1010",
               "sk-yaml-1212", "wm-b-1313", "pw-1414"]  # fmt: skip


def test_the_name_decides_not_a_word_in_it() -> None:
    secret = ["api_key", "admin_api_key", "hf_token", "HF_TOKEN", "watermark_key_b", "ssl_keyfile_password",
              "client_secret", "db-password", "apiKey", "hfToken", "OPENAI_API_KEY", "Authorization"]  # fmt: skip
    plain = ["max_total_tokens", "max_prefill_tokens", "speculative_num_draft_tokens", "tokenizer_path",
             "num_reserved_decode_tokens", "speculative_token_map", "ssl_keyfile", "key_value_cache",
             "tokens", "skip_tokenizer_init", "max_running_requests"]  # fmt: skip
    assert [n for n in secret if not is_secret_name(n)] == []
    assert [n for n in plain if is_secret_name(n)] == []


def test_log_lines_in_every_quoting_style() -> None:
    raw = "\n".join(LOG)
    assert all(s in raw for s in LOG_SECRETS)
    clean = "\n".join(redact_lines(LOG))
    leaked = [s for s in LOG_SECRETS if s in clean]
    assert leaked == []
    # the shape around each secret is kept, so a reader sees what was there
    for kept in ("api_key='<redacted>'", 'admin_api_key="<redacted>"', "--api-key <redacted>",
                 "--admin-api-key=<redacted>", '--hf-token "<redacted>"', '"api_key": "<redacted>"',
                 "'admin_api_key': '<redacted>'", "HF_TOKEN=<redacted>", 'OPENAI_API_KEY="<redacted>"',
                 "Bearer <redacted>", "api_key: <redacted>", "watermark_key_b='<redacted>'",
                 "ssl_keyfile_password=<redacted>"):  # fmt: skip
        assert kept in clean, kept
    # numeric settings whose names contain "token", and what is not a secret, stay readable
    for kept in ("max_total_tokens=200000", "max_prefill_tokens=16384", "speculative_num_draft_tokens=4",
                 "--max-total-tokens 200000", "--max-prefill-tokens 16384", '"max_prefill_tokens": 16384',
                 "'num_reserved_decode_tokens': 512", "MAX_TOTAL_TOKENS=200000", "hf_token=None",
                 "max_running_requests: 256", "tokenizer_path=/models/kimi/tokenizer", "--port 30000",
                 "CUDA_VISIBLE_DEVICES=0,1"):  # fmt: skip
        assert kept in clean, kept


def test_known_secrets_go_wherever_they_are() -> None:
    line = "the agent called with sk-agent-4711 inside a word:xsk-agent-4711y"
    assert redact_text(line, ["sk-agent-4711"]).count(REDACTED) == 2
    assert redact_text("short abc", ["abc"]) == "short abc"  # too short to be a key: never blanked


def test_server_info_keeps_its_numbers_and_loses_its_keys() -> None:
    clean = redact_mapping(INFO, secrets=["sk-live-123456"])
    text = json.dumps(clean)
    for secret in ("sk-live-123456", "adm-987654", "hunter22", "hf_abcdef", "hf_hub_777", "wm-a-2468",
                   "wm-b-1357", "hf_cmd_5555"):  # fmt: skip
        assert secret not in text, secret
    assert clean["api_key"] == clean["watermark_key_b"] == REDACTED
    assert clean["hf_token"] is None  # nothing to hide stays as it was
    for key in ("max_total_tokens", "max_prefill_tokens", "max_total_num_tokens", "num_reserved_decode_tokens",
                "speculative_num_draft_tokens", "speculative_token_map", "tokenizer_path", "ssl_keyfile"):  # fmt: skip
        assert clean[key] == INFO[key], key
    assert clean["internal_states"][0]["env_vars"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    command = clean["launch_command"]
    assert "--api-key <redacted>" in command and "--admin-api-key=<redacted>" in command
    assert "--hf-token '<redacted>'" in command and "--max-total-tokens 200000" in command
    assert INFO["api_key"] == "sk-live-123456"  # the input is not modified


def test_numbers_and_booleans_under_a_secret_name_are_not_secrets() -> None:
    assert redact_mapping({"token": 5, "api_key": False, "auth": None, "secret": ""}) == {
        "token": 5,
        "api_key": False,
        "auth": None,
        "secret": "",
    }


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    info=st.dictionaries(st.text(max_size=12), _json, max_size=6),
    key=st.sampled_from(["api_key", "admin_api_key", "hf_token", "HF_TOKEN", "client_secret", "db-password"]),
    secret=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=8, max_size=24),
    depth=st.integers(min_value=0, max_value=2),
    style=st.sampled_from(["--api-key {}", "--api-key={}", "api_key='{}'", 'api_key="{}"', "HF_TOKEN={}"]),
)
def test_a_secret_never_survives_redaction(
    info: dict[str, object], key: str, secret: str, depth: int, style: str
) -> None:
    """Wherever the key sits, whatever else the answer holds, and however a text spells it."""
    assume(secret not in json.dumps(info) and secret not in key)  # a key spelling it is no leak
    assume(secret not in "python -m sglang.launch_server " + style + " --port 1")  # nor the flag's name
    node: dict[str, object] = dict(info)
    root = node
    for level in range(depth):
        child: dict[str, object] = {}
        node[f"level{level}"] = [child]
        node = child
    node[key] = secret
    root["launch_command"] = "python -m sglang.launch_server " + style.format(secret) + " --port 1"
    assert secret not in json.dumps(redact_mapping(root))


# --- profiles (issue 25) -------------------------------------------------------------------------------


def test_env_values_are_hidden_whatever_their_name_but_numbers_and_booleans() -> None:
    from agent.sglang.redact import hidden_env_values, redact_change, redact_profile_data

    env = {"HF_TOKEN": "hf_abcdefgh", "HF_HOME": "/data/hf", "NCCL_P2P": "1", "FLAG": "true", "EMPTY": ""}
    data = {"identity": {"name": "p"}, "server": {"env": env, "env_files": {"WANDB_API_KEY": "/k/wandb"}}}
    shown = redact_profile_data(data)
    assert shown["server"]["env"] == {"HF_TOKEN": REDACTED, "HF_HOME": REDACTED, "NCCL_P2P": "1",
                                      "FLAG": "true", "EMPTY": ""}  # fmt: skip
    assert shown["server"]["env_files"] == {"WANDB_API_KEY": "/k/wandb"}  # a path: where, not what
    assert data["server"]["env"]["HF_TOKEN"] == "hf_abcdefgh"  # the input is not modified
    assert sorted(hidden_env_values(env)) == ["/data/hf", "hf_abcdefgh"]
    assert redact_change("server.env.HF_HOME", "/data/hf") == REDACTED
    assert redact_change("server.env.NCCL_P2P", "1") == "1"
    assert redact_change("server.env", {"A": "x-secret", "B": "2"}) == {"A": REDACTED, "B": "2"}
    assert redact_change("server.env_files.HF_TOKEN", "/k/hf") == "/k/hf"
    assert redact_change("speculation.threshold", 12) == 12
    assert redact_change("server.max_total_tokens", 4096) == 4096


def test_a_profile_files_text_keeps_its_comments_and_loses_its_env_values() -> None:
    from agent.sglang.redact import redact_profile_text

    text = '# my notes\n[server.env]\nHF_TOKEN = "hf_abc\\"def"\nLITERAL = \'lit-value-1\'\nN = "1"\n'
    shown = redact_profile_text(text, ['hf_abc"def', "lit-value-1"])
    assert shown == '# my notes\n[server.env]\nHF_TOKEN = "<redacted>"\nLITERAL = "<redacted>"\nN = "1"\n'


def test_the_validator_warns_on_a_secret_in_a_profile_and_points_to_env_files() -> None:
    from agent.profile import parse_profile
    from agent.sglang.rules import check_profile

    base = (Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml").read_text()
    profile = parse_profile(
        base + '\n[server.env]\nHF_TOKEN = "anything"\nUPLOAD = "ghp_abcdefghijklmnop1234"\nMODE = "fast"\n'
    )
    warnings = {i.key: i.rule for i in check_profile(profile, "p.toml") if i.severity == "warning"}
    assert "server.env.MODE" not in warnings
    assert "its name says secret" in warnings["server.env.HF_TOKEN"]
    assert "credential's shape" in warnings["server.env.UPLOAD"]
    assert all(
        "server.env_files" in rule and "chmod 600" in rule for rule in warnings.values() if "secret" in rule
    )


def test_the_record_copy_of_a_profile_hides_its_env_values_and_still_loads() -> None:
    from agent.profile import dump_profile, parse_profile
    from agent.sglang.redact import hidden_profile_toml

    base = (Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml").read_text()
    profile = parse_profile(base + '\n[server.env]\nHF_TOKEN = "hf_abcdefgh12"\nN = "4"\n')
    hidden = hidden_profile_toml(dump_profile(profile))
    assert "hf_abcdefgh12" not in hidden
    assert parse_profile(hidden).server.env == {"HF_TOKEN": REDACTED, "N": "4"}
    assert hidden_profile_toml('api_key = "sk-abcdef"') == 'api_key = "<redacted>"'  # not a profile
