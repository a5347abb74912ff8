"""agent smoke's table reads in words: no JSON answer shown as `[false]`, no message cut mid-word."""

from __future__ import annotations

from agent.cli.smoke import render_table
from agent.smoke.checks import CheckRow, refusal_words


def test_a_refusal_is_said_in_words() -> None:
    assert refusal_words(200, [False]) == "refused: the scheduler answered false"
    assert refusal_words(200, [False, False]) == "refused: all 2 schedulers answered false"
    assert refusal_words(400, {"error": "must be an object"}) == "refused with HTTP 400"
    assert "[" not in refusal_words(200, [False]) and "HTTP 200" not in refusal_words(200, [False])


def test_a_long_cell_is_given_whole_under_its_row() -> None:
    why = "adaptive_spec_steps: must be an object with a whole number of steps among the built ones"
    row = CheckRow(engine="oracle", check="wrong type refused", expected="refused, nothing changed")
    row.measured, row.ok, row.detail, row.seconds = "refused with HTTP 400, state unchanged", True, why, 0.1
    text = "\n".join(render_table([row]))
    assert why in text, text
