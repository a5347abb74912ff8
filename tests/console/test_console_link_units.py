"""The link's pure parts: SSE parsing, backoff, replay files, SSH target checks."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from console.link import LinkError
from console.link.backoff import Backoff
from console.link.replay import ReplayLink, load_recording
from console.link.sse import SseParser
from console.link.ssh import SshTarget, host_key_help


def feed(parser: SseParser, text: str) -> list[tuple[int, str, dict[str, object]]]:
    out = []
    for line in text.split("\n"):
        item = parser.feed(line)
        if item is not None:
            out.append((item.seq, item.kind, item.data))
    return out


def test_sse_items_keepalives_and_unknown_kinds() -> None:
    text = (
        ": ping\n\n"
        'id: 5\nevent: snapshot\ndata: {"seq": 5, "time": 1.0}\n\n'
        'id: 6\nevent: mystery\ndata: {"seq": 6}\n\n'
        'id: 7\nevent: event\ndata: {"seq": 7,\ndata:  "time": 2.0}\n\n'
    )
    assert feed(SseParser(), text) == [
        (5, "snapshot", {"seq": 5, "time": 1.0}),
        (7, "event", {"seq": 7, "time": 2.0}),
    ]


def test_sse_refuses_non_json() -> None:
    parser = SseParser()
    with pytest.raises(LinkError, match="not JSON"):
        feed(parser, "id: 1\nevent: snapshot\ndata: {oops\n\n")


def test_backoff_grows_to_the_cap_with_jitter() -> None:
    backoff = Backoff(base_s=1.0, cap_s=8.0, jitter=0.5)
    rng = random.Random(1)
    delays = [backoff.delay(n, rng) for n in range(1, 8)]
    caps = [1, 2, 4, 8, 8, 8, 8]
    for delay, cap in zip(delays, caps, strict=True):
        assert cap / 2 <= delay <= cap
    assert len({round(d, 6) for d in delays[3:]}) > 1  # jitter: not all the same at the cap


def test_replay_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"seq": 1, "time": 1}\n{"kind": "snapshot", "data": {"time": 2}}\n')
    with pytest.raises(LinkError, match=r"rec.jsonl:2: expected a snapshot or event with a 'seq'"):
        load_recording(path)


async def test_replay_serves_recorded_gets_and_refuses_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    lines = [
        {"seq": 1, "kind": "snapshot", "data": {"seq": 1, "time": 10.0}},
        {"kind": "response", "method": "GET", "path": "/v1/profiles", "data": {"profiles": []}},
        {"seq": 2, "kind": "event", "data": {"seq": 2, "time": 11.0}},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    link = ReplayLink(path, speed=0)
    await link.connect()
    assert await link.request("GET", "/v1/profiles") == {"profiles": []}
    with pytest.raises(LinkError, match="not available while replaying") as info:
        await link.request("POST", "/v1/actions", body={})
    assert not info.value.retryable
    seen = []
    with pytest.raises(LinkError, match="end of the recording"):
        async for item in link.stream(since=1):
            seen.append(item.seq)
    assert seen == [2]


@pytest.mark.parametrize("bad", ["", "-oProxyCommand=x", "a b@host"])
def test_ssh_target_refuses_option_injection(bad: str) -> None:
    with pytest.raises(ValueError, match="not an SSH destination"):
        SshTarget(bad)


def test_host_key_help_names_both_fixes() -> None:
    text = host_key_help(SshTarget("ops@gpu1", port=2222), Exception("Host key is not trusted"))
    assert "ssh -p 2222 ops@gpu1" in text
    assert "ssh-keygen -R '[gpu1]:2222'" in text
    assert "never accepts" in text
