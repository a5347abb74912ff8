"""Writes ``agent/bench/datasets/chat-small.jsonl``: the small chat dataset the project ships for its
tests and the demo (issue 45 item 1). Every line is written here from the templates below (nothing is
downloaded, no user's text): short and long operator questions about running an inference server,
some with a long pasted context, each with the output length a reply of its kind would have.

    python -m tools.make_bench_dataset        # writes the file again, byte for byte the same
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "agent" / "bench" / "datasets" / "chat-small.jsonl"

QUESTIONS = [
    "Why does the time to first token grow when more users connect at once?",
    "Explain what speculative decoding does, in two sentences.",
    "Which of these two launch commands uses less GPU memory, and why?",
    "Summarise the log below and say which line shows the first error.",
    "Write a short shell script that checks every GPU's temperature once a minute.",
    "What does a prefix cache hit rate of forty percent mean for my latency?",
    "Rewrite this paragraph so a new operator understands it on the first read.",
    "List three reasons a draft model's acceptance rate could drop after an update.",
    "How do I tell whether the server is limited by memory bandwidth or by compute?",
    "Translate the following status report into plain words for a manager.",
    "Compare a batch size of eight with one of sixty four for a chat service.",
    "Given the metrics below, should the speculation threshold go up or down?",
]
CONTEXT_WORDS = [
    "request",
    "queue",
    "batch",
    "token",
    "prefill",
    "decode",
    "cache",
    "page",
    "memory",
    "gpu",
    "kernel",
    "latency",
    "throughput",
    "scheduler",
    "draft",
    "target",
    "accept",
    "verify",
    "step",
    "stream",
    "client",
    "server",
    "metric",
    "window",
    "level",
    "arm",
]
SYSTEM = "You are a careful assistant for the operators of a GPU inference service."


def lines(seed: int = 45) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for i in range(48):
        question = QUESTIONS[i % len(QUESTIONS)]
        pasted = rng.choice([0, 0, 40, 120, 400, 900])
        context = " ".join(rng.choice(CONTEXT_WORDS) for _ in range(pasted))
        content = f"{question}\n\n{context}".strip()
        output_len = rng.choice([16, 48, 96, 160, 256])
        if i % 3 == 0:
            out.append({"prompt": content, "output_len": output_len})
        else:
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]
            out.append({"messages": messages, "output_len": output_len})
    return out


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines()), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
