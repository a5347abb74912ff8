"""The profile schema: what loads, what is refused, and that every refusal names the key and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.profile import Profile, ProfileError, load_profile, parse_profile

PROFILES = Path(__file__).resolve().parents[1] / "profiles"
EAGLE3 = (PROFILES / "kimi-k25-eagle3.toml").read_text()
MINIMAL = '[identity]\nname = "m"\n[model]\npath = "/models/x"\n'


def _issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "p.toml")
    assert all(i.file == "p.toml" for i in err.value.issues)
    return [(i.key, i.rule) for i in err.value.issues]


def test_shipped_profiles_load() -> None:
    names = {load_profile(p).identity.name for p in PROFILES.glob("*.toml")}
    assert names == {"kimi-k25-eagle3", "kimi-k25-eagle3-tree", "kimi-k25-baseline", "local-sim"}


def test_minimal_profile_gets_defaults() -> None:
    profile = parse_profile(MINIMAL)
    assert isinstance(profile, Profile)
    assert not profile.speculative
    assert profile.server.tp_size == 8 and profile.server.host == "127.0.0.1"


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ("eagle_topk = 1", "eagle_topk = 0", "speculation.eagle_topk", "greater than or equal to 1"),
        ("tp_size = 8", 'tp_size = "eight"', "server.tp_size", "integer"),
        ("num_steps = 3\n", "", "speculation.num_steps", "EAGLE3 needs num_steps"),
        ("[speculation]\n", "[speculation]\nnum_stepz = 3\n", "speculation.num_stepz", "unknown key"),
        ('algorithm = "EAGLE3"', 'algorithm = "EAGLE2"', "speculation.algorithm", "EAGLE3"),
        ("live_steps = [1, 2, 3]", "live_steps = [1, 1]", "speculation.live_steps", "repeat"),
        (
            "mem_fraction_static = 0.85",
            "mem_fraction_static = 1.5",
            "server.mem_fraction_static",
            "less than 1",
        ),
        ('kv_cache_dtype = "auto"', 'kv_cache_dtype = "fp9"', "server.kv_cache_dtype", "fp8_e4m3"),
        (
            'destination = "ops@gpu-host"',
            'destination = "-oProxyCommand=x"',
            "host.destination",
            "must not start",
        ),
        ('path = "/models/Kimi-K2.5-INT4"', 'path = "/models/../etc"', "model.path", ".."),
        ("[server.env]\n", '[server.env]\n"bad name" = "1"\n', "server.env", "environment variable"),
    ],
)
def test_bad_values_name_key_and_rule(old: str, new: str, key: str, words: str) -> None:
    assert old in EAGLE3
    issues = _issues(EAGLE3.replace(old, new, 1))
    assert any(k == key and words in r for k, r in issues), issues


def test_every_error_is_reported_at_once() -> None:
    text = EAGLE3.replace("eagle_topk = 1", "eagle_topk = 0").replace("tp_size = 8", 'tp_size = "eight"')
    keys = {k for k, _ in _issues(text)}
    assert {"speculation.eagle_topk", "server.tp_size"} <= keys


def test_missing_required_sections() -> None:
    keys = {k for k, _ in _issues('[identity]\nname = "x"\n')}
    assert "model" in keys


def test_not_toml() -> None:
    assert _issues("[identity\nname=")[0][1].startswith("not valid TOML")


def test_extra_flags_must_start_with_a_flag() -> None:
    text = EAGLE3.replace("[server]\n", '[server]\nextra_flags = ["lpm"]\n')
    assert any(k == "server.extra_flags" for k, _ in _issues(text))
    ok = parse_profile(EAGLE3.replace("[server]\n", '[server]\nextra_flags = ["--schedule-policy=lpm"]\n'))
    assert ok.server.extra_flags == ["--schedule-policy=lpm"]


def test_profiles_are_immutable() -> None:
    profile = parse_profile(MINIMAL)
    with pytest.raises(ValueError):
        profile.server.tp_size = 4  # type: ignore[misc]


def test_env_files_names_a_file_per_variable_and_never_both_forms() -> None:
    local = (PROFILES / "local-sim.toml").read_text()
    ok = parse_profile(local + '\n[server.env_files]\nHF_TOKEN = "~/.config/hf.token"\n')
    assert ok.server.env_files == {"HF_TOKEN": "~/.config/hf.token"}
    both = local + '\n[server.env]\nHF_TOKEN = "x"\n\n[server.env_files]\nHF_TOKEN = "/k"\n'
    assert ("server.env_files", "HF_TOKEN set in both env and env_files; keep one") in [
        (k, r.split(" (got")[0]) for k, r in _issues(both)
    ]
    bad = _issues(local + '\n[server.env_files]\n"BAD NAME" = "/k"\nOK = "../x"\n')
    assert [k for k, _ in bad] == ["server.env_files"]
    assert "not an environment variable name" in bad[0][1]


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        (
            "threshold = 4",
            "threshold = true",
            "speculation.threshold",
            "must be an integer (got true, a boolean)",
        ),
        (
            "threshold = 4",
            'threshold = "8"',
            "speculation.threshold",
            "(got “8”, a text)",
        ),
        ("tp_size = 8", "tp_size = 8.0", "server.tp_size", "must be an integer (got 8.0)"),
        (
            "production = true",
            'production = "yes"',
            "identity.production",
            "must be a boolean, true or false",
        ),
        (
            "adaptive = true",
            "adaptive = 1",
            "speculation.adaptive",
            "must be a boolean, true or false (got 1)",
        ),
    ],
)
def test_a_profile_is_strict_no_boolean_or_text_where_a_number_is_meant(
    old: str, new: str, key: str, words: str
) -> None:
    """Issue 25: `threshold = true` loaded as 1 (never speculate), `threshold = "8"` as 8."""
    text = EAGLE3.replace(
        "threshold = " + EAGLE3.split("\nthreshold = ", 1)[1].split("\n", 1)[0], "threshold = 4", 1
    )
    assert old in text
    issues = _issues(text.replace(old, new, 1))
    assert any(k == key and words in r for k, r in issues), issues
