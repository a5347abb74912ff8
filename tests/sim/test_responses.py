"""The incrementally encoded ``/generate`` stream writes exactly what encoding the whole body would."""

from __future__ import annotations

import json

from agent.sim import responses, text
from agent.sim.request import SimRequest


def _whole_chunk(req: SimRequest, draft: int) -> bytes:
    """A running request's chunk built the plain way: the whole cumulative body, encoded at once."""
    body = {
        "text": text.words(req.rid, 0, req.output_len),
        "output_ids": text.token_ids(req.rid, 0, req.output_len),
        "meta_info": responses.meta_info(req, False, draft),
    }
    return responses.dumps(body)


def test_generate_stream_chunks_equal_the_whole_body_encoded() -> None:
    req = SimRequest(rid="a1b2", input_len=12, max_new_tokens=40)
    stream = responses.GenerateStream(req, startup_draft_tokens=4)
    assert stream.chunk(False) == _whole_chunk(req, 4)  # nothing generated yet
    for now, retractions in ((1, 0), (4, 0), (4, 1), (9, 1), (17, 2), (33, 2)):
        req.output_len, req.retractions = now, retractions
        chunk = stream.chunk(False)
        assert chunk == _whole_chunk(req, 4)
        parsed = json.loads(chunk)
        assert len(parsed["output_ids"]) == len(parsed["text"].split()) == now
        assert parsed["meta_info"]["num_retractions"] == retractions

    req.output_len, req.verify_ct, req.correct_drafts = 40, 14, 26
    req.finish_reason = {"type": "length", "length": 40}
    req.arrival, req.finished_at = 1.0, 3.5
    final = stream.chunk(True)
    assert final == responses.dumps(responses.generate_body(req, True, 4))
    meta = json.loads(final)["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 40} and meta["spec_verify_ct"] == 14
