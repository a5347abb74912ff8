"""Every flag k25console renders exists in SGLang 0.5.23's CLI, with the right arity and an allowed value.

The CLI is read from the wheel's source (``sglang_source.cli_flags``), never imported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

import pytest
from sglang_source import Flag, cli_flags, exec_functions, flags_table

from agent.profile import Profile, load_profile, parse_profile
from agent.profile.schema import KvCacheDtype
from agent.sglang import launch
from agent.sglang.cli_flags import known_flags
from agent.sglang.extra_flags import flag_names
from agent.sglang.rules import RENDERED_FLAGS, SM120_FAILING_FLAGS, check_profile

pytestmark = pytest.mark.contract

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
SHIPPED = sorted(PROFILES.glob("*.toml"))


@pytest.fixture(scope="module")
def flags(sglang_src: Path) -> dict[str, Flag]:
    found = cli_flags(sglang_src)
    # The reader must see the flags the reference names, or it is reading the source wrongly.
    assert {
        "--model-path",
        "--tp-size",
        "--speculative-adaptive-config",
        "--enable-metrics",
        "--config",
    } <= set(found)
    assert "--cuda-graph-max-bs" not in found  # renamed in 0.5.23
    return found


def _variants() -> list[tuple[str, Profile]]:
    """Shipped profiles plus variants that exercise every optional flag the renderer can emit."""
    out = [(p.name, load_profile(p)) for p in SHIPPED]
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    text = text.replace(
        "[server]\n",
        '[server]\nmax_total_tokens = 200000\nchunked_prefill_size = 8192\napi_key_file = "/k"\nadmin_api_key_file = "/a"\nextra_flags = ["--disable-overlap-schedule", "--schedule-policy", "lpm"]\n',
    )
    text = text.replace("[model]\n", "[model]\nlanguage_model_only = true\n")
    out.append(("every-option", parse_profile(text)))
    return out


def _check_argv(argv: list[str], flags: dict[str, Flag]) -> None:
    assert argv[:2] == ["-m", "sglang.launch_server"]
    i = 2
    while i < len(argv):
        name = argv[i]
        assert name.startswith("--"), f"expected a flag at {i}, got {name!r} in {argv}"
        assert name in flags, f"{name} is not a flag of SGLang 0.5.23"
        flag = flags[name]
        if flag.kind == "switch":
            assert i + 1 == len(argv) or argv[i + 1].startswith("--"), (
                f"{name} is a switch but is given a value"
            )
            i += 1
            continue
        assert i + 1 < len(argv), f"{name} needs a value"
        values = [argv[i + 1]]
        i += 2
        if flag.kind == "list":
            while i < len(argv) and not argv[i].startswith("--"):
                values.append(argv[i])
                i += 1
        for value in values:
            if flag.value_type == "int":
                int(value)
            elif flag.value_type == "float":
                float(value)
            if flag.choices is not None:
                assert value in flag.choices, (
                    f"{name} {value!r} is not one of 0.5.23's choices {flag.choices}"
                )


@pytest.mark.parametrize(("label", "profile"), _variants(), ids=[label for label, _ in _variants()])
def test_rendered_argv_uses_only_real_flags(label: str, profile: Profile, flags: dict[str, Flag]) -> None:
    spec = launch.render_launch(profile, run_dir="/run/k25")
    _check_argv(spec.argv, flags)


def test_checker_catches_a_gone_flag(flags: dict[str, Flag]) -> None:
    with pytest.raises(AssertionError, match="not a flag"):
        _check_argv(["-m", "sglang.launch_server", "--cuda-graph-max-bs", "256"], flags)
    with pytest.raises(AssertionError, match="choices"):
        _check_argv(["-m", "sglang.launch_server", "--kv-cache-dtype", "fp9"], flags)
    with pytest.raises(AssertionError, match="switch"):
        _check_argv(["-m", "sglang.launch_server", "--enable-metrics", "true"], flags)


def test_whole_argv_parses_with_a_parser_built_from_the_source(
    flags: dict[str, Flag], sglang_src: Path, tmp_path: Path
) -> None:
    """Rebuild 0.5.23's argparse parser from the source, merge our --config key file with SGLang's own merger, parse."""
    parser = argparse.ArgumentParser(prog="sglang serve")
    seen: set[str] = set()
    by_field: dict[str, list[Flag]] = {}
    for flag in flags.values():
        by_field.setdefault(
            flag.field + ("-no" if flag.name.startswith("--no-") and flag.kind == "switch" else ""), []
        ).append(flag)
    for group in by_field.values():
        names = [f.name for f in group if f.name not in seen]
        seen |= set(names)
        if not names:
            continue
        first = group[0]
        if first.kind == "switch":
            parser.add_argument(*names, dest=first.field, action="store_true")
        elif first.kind == "list":
            parser.add_argument(*names, dest=first.field, nargs="+")
        else:
            parser.add_argument(*names, dest=first.field, choices=first.choices)
    merger_mod = exec_functions(
        sglang_src / "srt/utils/server_args_config_parser.py",
        ("_config_keys", "_takes_one_value", "ConfigArgumentMerger"),
        {
            "argparse": argparse,
            "json": json,
            "logging": __import__("logging"),
            "Path": Path,
            "Any": object,
            "Dict": dict,
            "List": list,
            "yaml": pytest.importorskip("yaml"),
            "logger": __import__("logging").getLogger("t"),
        },
    )
    key, admin = tmp_path / "api.key", tmp_path / "admin.key"
    key.write_text('s3cr"et:{x}\n')
    admin.write_text("adm1n-#key\n")
    text = (
        (PROFILES / "kimi-k25-eagle3.toml")
        .read_text()
        .replace("[server]\n", f'[server]\napi_key_file = "{key}"\nadmin_api_key_file = "{admin}"\n')
    )
    profile = parse_profile(text)
    spec = launch.render_launch(profile, run_dir=tmp_path / "run")
    launch.write_launch_files(spec)
    assert 's3cr"et' not in " ".join(spec.argv)
    merged = merger_mod.ConfigArgumentMerger(parser).merge_config_with_args(spec.argv[2:])
    ns = parser.parse_args(merged)
    assert ns.api_key == 's3cr"et:{x}'
    assert ns.admin_api_key == "adm1n-#key"
    assert ns.speculative_adaptive is True
    assert ns.speculative_adaptive_config == spec.adaptive_config_path
    assert ns.cuda_graph_max_bs_decode == "256"
    assert ns.enable_metrics is True


def test_profile_kv_dtypes_are_sglangs(flags: dict[str, Flag]) -> None:
    assert set(get_args(KvCacheDtype)) == set(flags["--kv-cache-dtype"].choices or ())


def test_rule_flag_names_exist(flags: dict[str, Flag]) -> None:
    """Flags the rules look for in extra_flags are real 0.5.23 spellings, so a rule cannot silently miss."""
    for name in [
        *RENDERED_FLAGS,
        *SM120_FAILING_FLAGS,
        "--attn-dp-size",
        "--enable-multi-layer-eagle",
        "--enable-two-batch-overlap",
        "--enable-pdmux",
        "--speculative-use-rejection-sampling",
    ]:
        assert name in flags, name


def test_unknown_extra_flag_is_an_error_and_known_one_is_not() -> None:
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    bad = parse_profile(
        text.replace("[server]\n", '[server]\nextra_flags = ["--cuda-graph-max-bs", "512"]\n')
    )
    issues = check_profile(bad, "x.toml")
    assert any(
        i.key == "server.extra_flags" and "--cuda-graph-max-bs" in i.rule and i.severity == "error"
        for i in issues
    )
    good = parse_profile(text.replace("[server]\n", '[server]\nextra_flags = ["--schedule-policy", "lpm"]\n'))
    assert not [i for i in check_profile(good, "x.toml") if i.severity == "error"]
    assert flag_names(["--a=1", "x", "--b"]) == ["--a", "--b"]


def test_shipped_flag_table_matches_the_wheel(sglang_src: Path) -> None:
    """agent/sglang/cli_flags.json (used to check extra_flags at validation time) is 0.5.23's CLI exactly."""
    expected = flags_table(sglang_src)
    shipped = known_flags()
    assert shipped == expected, (
        f"cli_flags.json is stale: only shipped {sorted(set(shipped) - set(expected))[:10]}, "
        f"only in the wheel {sorted(set(expected) - set(shipped))[:10]}; regenerate with "
        "`python tests/contract/sglang_source.py <extracted sglang dir> > agent/sglang/cli_flags.json`"
    )
