"""``agent profile``: validate, render and compare operator profiles against SGLang 0.5.23's rules; get and
save them in the running agent's library (``agent.cli.profile_remote``)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from agent.profile import Profile, ProfileError, ProfileIssue, diff_profiles, load_profile
from agent.sglang import SGLANG_VERSION
from agent.sglang.launch import default_run_dir, render_launch
from agent.sglang.rules import check_profile, classify_change, errors_of


def _print_issues(issues: list[ProfileIssue]) -> None:
    for issue in issues:
        print(f"{issue.severity}: {issue}", file=sys.stderr)


def load_checked(path: str) -> tuple[Profile | None, list[ProfileIssue]]:
    """Load a profile and apply SGLang's rules; the profile is None when it could not be loaded."""
    try:
        profile = load_profile(path)
    except ProfileError as exc:
        return None, list(exc.issues)
    return profile, check_profile(profile, path)


def load_valid_profile(path: str) -> Profile | None:
    """Load and check a profile, printing its issues; None when it has any error."""
    profile, issues = load_checked(path)
    _print_issues(issues)
    if profile is None or errors_of(issues):
        return None
    return profile


def _validate(args: argparse.Namespace) -> int:
    failed = False
    for path in args.paths:
        profile, issues = load_checked(path)
        _print_issues(issues)
        errors = errors_of(issues)
        if profile is None or errors:
            failed = True
            print(f"{path}: invalid ({len(errors)} error(s))")
        else:
            warnings = len(issues) - len(errors)
            print(
                f"{path}: valid for SGLang {SGLANG_VERSION}"
                + (f" ({warnings} warning(s))" if warnings else "")
            )
    return 1 if failed else 0


def _render(args: argparse.Namespace) -> int:
    profile = load_valid_profile(args.path)
    if profile is None:
        return 1
    spec = render_launch(profile, run_dir=args.run_dir)
    if args.json:
        print(json.dumps(spec.to_dict(), indent=2))
        return 0
    print(f"# SGLang {SGLANG_VERSION} launch for {profile.identity.name} (run with the stack's python)")
    print("python " + shlex.join(spec.argv))
    if spec.env:
        print("\n# environment")
        for name, value in sorted(spec.env.items()):
            print(f"{name}={shlex.quote(value)}")
    if spec.env_files:
        print("\n# environment read from files when the engine starts (never printed, never argv)")
        for name, path in sorted(spec.env_files.items()):
            print(f"{name} from {path}")
    if spec.adaptive_config is not None:
        print(f"\n# adaptive config, written to {spec.adaptive_config_path}")
        print(json.dumps(spec.adaptive_config, indent=2))
    if spec.secrets_config_path is not None:
        files = ", ".join(f"{k} from {v}" for k, v in sorted(spec.key_files.items()))
        print(f"\n# keys go to {spec.secrets_config_path} (mode 0600, passed with --config): {files}")
    return 0


def _diff(args: argparse.Namespace) -> int:
    old = load_valid_profile(args.old)
    new = load_valid_profile(args.new)
    if old is None or new is None:
        return 1
    changes = diff_profiles(old, new)
    plan = classify_change(old, new)
    if args.json:
        out: dict[str, Any] = {
            "changes": [{"key": c.key, "old": c.old, "new": c.new} for c in changes],
            "plan": {"mode": plan.mode, "reasons": plan.reasons},
        }
        print(json.dumps(out, indent=2))
        return 0
    for change in changes:
        print(str(change))
    if not changes:
        print("no differences")
    print(f"\nplan: {plan.mode}")
    for reason in plan.reasons:
        print(f"  - {reason}")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="validate, render and compare operator profiles",
        description=f"Operator profiles (TOML), checked against SGLang {SGLANG_VERSION}'s own rules.",
    )
    sub = parser.add_subparsers(dest="profile_command", metavar="ACTION", required=True)

    validate = sub.add_parser(
        "validate",
        help="check profiles; exit 1 if any has an error",
        description="Check each profile: its format, then SGLang's speculation rules. Warnings are printed "
        "and do not fail; every error names the file, the key and the rule, and the exit code is 1.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="profile TOML files")
    validate.set_defaults(handler=_validate)

    render = sub.add_parser(
        "render",
        help="print the SGLang launch argv, environment and adaptive config",
        description="Render a valid profile into what the agent starts: the argv after the stack's python "
        "(never a shell string), the added environment, and the adaptive config JSON.",
    )
    render.add_argument("path", metavar="PATH", help="profile TOML file")
    render.add_argument(
        "--json", action="store_true", help='print {"argv": [...], "env": {...}, "adaptive_config": ...}'
    )
    render.add_argument(
        "--run-dir",
        default=None,
        help=f"where the launch files would be written (default {default_run_dir()})",
    )
    render.set_defaults(handler=_render)

    diff = sub.add_parser(
        "diff",
        help="compare two profiles and say whether the change is live or needs a restart",
        description="List every key that differs from A (the running profile) to B, and the plan: live "
        "(the threshold, or steps among those built at start-up), restart, or noop.",
    )
    diff.add_argument("old", metavar="A", help="the profile the server runs")
    diff.add_argument("new", metavar="B", help="the profile to change to")
    diff.add_argument(
        "--json", action="store_true", help='print {"changes": [...], "plan": {"mode", "reasons"}}'
    )
    diff.set_defaults(handler=_diff)

    from agent.cli import profile_remote

    profile_remote.add_commands(sub)
