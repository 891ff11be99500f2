"""Log line formats."""

from __future__ import annotations

import json
import logging

from webhook.logs import JsonFormatter, TextFormatter


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
