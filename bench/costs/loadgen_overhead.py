"""How much CPU the benchmark's load generator spends per streamed chunk (it must never be the bottleneck).

Starts a bare SSE server in a child process that answers every POST with ``--tokens`` cumulative
/generate-style chunks as fast as it can, then streams ``--concurrency`` requests through
(a) agent.bench's raw asyncio client (one keep-alive connection per worker) and (b) one pooled
httpx.AsyncClient, and prints client CPU µs per chunk and chunks/s. The server runs in its own
process so the client's CPU is measured alone.

    .venv/bin/python -m bench.costs.loadgen_overhead --concurrency 250 --tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time

import httpx

from agent.bench.http_stream import StreamConnection, Target
from agent.bench.stream import generate_body, make_prompt, stream_request

SERVER = r"""
import asyncio, json, sys
TOKENS = int(sys.argv[2])
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            text = ""
            for i in range(1, TOKENS + 1):
                text += " tok"
                body = {"text": text, "output_ids": list(range(i)),
                        "meta_info": {"id": "x", "completion_tokens": i, "prompt_tokens": 16, "finish_reason": None}}
                data = ("data: " + json.dumps(body) + "\n\n").encode()
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
            data = b"data: [DONE]\n\n"
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
        pass
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def raw_client(url: str, concurrency: int, tokens: int) -> tuple[int, float, float]:
    target = Target.parse(url)
    conns = [StreamConnection(target) for _ in range(concurrency)]
    prompt = make_prompt(16, 1)
    t0, cpu0 = time.perf_counter(), time.process_time()
    records = await asyncio.gather(
        *(stream_request(c, prompt, tokens, chat_model=None, headers={}) for c in conns)
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    for c in conns:
        await c.close()
    return sum(r.output_tokens for r in records), wall, cpu


async def httpx_client(url: str, concurrency: int, tokens: int) -> tuple[int, float, float]:
    body = generate_body(make_prompt(16, 1), tokens)
    limits = httpx.Limits(max_connections=concurrency + 16, max_keepalive_connections=concurrency + 16)

    async def one(client: httpx.AsyncClient) -> int:
        count = 0
        async with client.stream("POST", f"{url}/generate", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    count = json.loads(line[5:])["meta_info"]["completion_tokens"]
        return count

    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        t0, cpu0 = time.perf_counter(), time.process_time()
        counts = await asyncio.gather(*(one(client) for _ in range(concurrency)))
        return sum(counts), time.perf_counter() - t0, time.process_time() - cpu0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=250)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(args.tokens)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        for name, fn in (("raw asyncio (agent.bench)", raw_client), ("httpx pooled", httpx_client)):
            chunks, wall, cpu = asyncio.run(fn(url, args.concurrency, args.tokens))
            print(
                f"{name:<26} c={args.concurrency} chunks={chunks} wall={wall:.2f}s "
                f"{chunks / wall:8.0f} chunks/s  client CPU {cpu / chunks * 1e6:6.1f} µs/chunk "
                f"({cpu / wall:.0%} of a core)"
            )
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
