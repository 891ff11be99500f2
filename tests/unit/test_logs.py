"""Log line formats."""

from __future__ import annotations

import json
import logging

from jobgate.common.logs import JsonFormatter, TextFormatter


def record(message="review", **fields):
    item = logging.LogRecord("jobgate.review", logging.INFO, __file__, 1, message, (), None)
    item.created, item.msecs = 1_700_000_000.25, 250.0
    if fields:
        item.fields = fields
    return item


def test_text_lines_are_key_value_with_quoting_only_when_needed():
    line = TextFormatter().format(record(uid="u-1", object="ns/a b", ms=0.5, dryRun=False, note='x="y"', empty=""))
    assert line == (
        '2023-11-14T22:13:20.250Z info  jobgate.review: review uid=u-1 object="ns/a b" ms=0.5 dryRun=False '
        'note="x=\\"y\\"" empty=""'
    )


def test_text_line_without_fields():
    assert TextFormatter().format(record("started")) == "2023-11-14T22:13:20.250Z info  jobgate.review: started"


def test_json_lines_carry_the_fields():
    document = json.loads(JsonFormatter().format(record(uid="u-1", ms=1.25)))
    assert document == {
        "time": "2023-11-14T22:13:20.250Z",
        "level": "info",
        "logger": "jobgate.review",
        "msg": "review",
        "uid": "u-1",
        "ms": 1.25,
    }


class CountingStream:
    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> None:
        self.writes.append(text)


def test_fast_lines_of_one_loop_iteration_are_written_together(monkeypatch):
    import asyncio

    from jobgate.common import logs

    stream = CountingStream()
    monkeypatch.setattr(logs._output, "stream", stream)
    monkeypatch.setattr(logs._output, "render", logs._text_line)
    line = logs.FastLine("jobgate.test")
    line.logger.setLevel(logging.INFO)

    async def three_reviews() -> int:
        for uid in ("a", "b", "c"):
            line.info("review", {"uid": uid})
        written_before_the_iteration_ended = len(stream.writes)
        await asyncio.sleep(0)
        return written_before_the_iteration_ended

    assert asyncio.run(three_reviews()) == 0
    assert len(stream.writes) == 1
    assert [text.rsplit("uid=", 1)[1] for text in stream.writes[0].splitlines()] == ["a", "b", "c"]
    # Outside an event loop nothing would flush later: the line is written at once.
    line.info("review", {"uid": "d"})
    assert len(stream.writes) == 2
    assert stream.writes[1].endswith("uid=d\n")


def test_remembered_quoting_stays_bounded_and_right():
    from jobgate.common import logs

    for index in range(logs._QUOTED_MAX + 10):
        assert logs._quoted(f"uid-{index}") == f"uid-{index}"
    assert len(logs._quoted_text) <= logs._QUOTED_MAX
    assert logs._quoted("a b") == logs._quoted("a b") == '"a b"'
    assert logs._quoted(False) == "False"
