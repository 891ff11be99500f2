"""Log lines for the long-running commands: plain ``key=value`` text, or one JSON object per line.

Structured fields travel in ``extra={"fields": {...}}``; objects are never logged whole.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import time
from typing import Any

import orjson

# A line per admission review is written on the webhook's hot path: the formatters below
# avoid datetime objects and per-character loops (a second's timestamp prefix is reused).
_BARE = re.compile(r'[^\s"=\\]+')
_seconds_cache: list[Any] = [None, ""]
_MILLISECONDS = [f".{milliseconds:03d}Z" for milliseconds in range(1000)]


def _timestamp(created: float) -> str:
    seconds = int(created)
    if _seconds_cache[0] != seconds:
        _seconds_cache[:] = [seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))]
    return _seconds_cache[1] + _MILLISECONDS[int((created - seconds) * 1000)]


# Most values of a review line (webhook, kind, operation, verdict, namespace/name) repeat from
# line to line: their quoted form is remembered (the table is emptied when full, so that unique
# values such as uids cannot make it grow).
_QUOTED_MAX = 4096
_quoted_text: dict[str, str] = {}


def _quoted(value: Any) -> str:
    kind = type(value)
    if kind is str:
        quoted = _quoted_text.get(value)
        if quoted is None:
            quoted = value if _BARE.fullmatch(value) else orjson.dumps(value).decode()
            if len(_quoted_text) >= _QUOTED_MAX:
                _quoted_text.clear()
            _quoted_text[value] = quoted
        return quoted
    if kind is int or kind is float or kind is bool:
        return str(value)
    return _quoted(str(value))


def _text_line(created: float, level: str, name: str, message: str, fields: dict[str, Any] | None) -> str:
    parts = [_timestamp(created), f"{level:5}", f"{name}:", message]
    if fields:
        quoted_text = _quoted_text
        for key, value in fields.items():
            # Inline the usual case of _quoted, a string seen before: this runs for every field of every review.
            quoted = quoted_text.get(value) if type(value) is str else None
            parts.append(f"{key}={quoted if quoted is not None else _quoted(value)}")
    return " ".join(parts)


def _json_line(created: float, level: str, name: str, message: str, fields: dict[str, Any] | None) -> str:
    document: dict[str, Any] = {"time": _timestamp(created), "level": level, "logger": name, "msg": message}
    if fields:
        document.update(fields)
    return orjson.dumps(document, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        line = _text_line(record.created, record.levelname.lower(), record.name, record.getMessage(), fields)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", None) or {})
        if record.exc_info:
            fields["error"] = self.formatException(record.exc_info)
        return _json_line(record.created, record.levelname.lower(), record.name, record.getMessage(), fields)


class FastLine:
    """A structured INFO line written straight to the log stream, for once-per-request logs.

    Same stream, format and level switch as the logging configuration, without a LogRecord and
    the handler machinery per line: on the webhook's hot path that machinery costs more than
    formatting the line does. Inside an event loop, the lines of one loop iteration are written
    together when it ends: one write system call for all of them instead of one each, which cost
    the webhook as much as rendering the line did. A line may then follow, by microseconds, a
    line that the logging module wrote during the same iteration.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.logger = logging.getLogger(name)
        self._pending: list[str] = []

    def info(self, message: str, fields: dict[str, Any]) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        if _output.stream is None:  # logging not configured by a command: use the logging module
            self.logger.info(message, extra={"fields": fields})
            return
        self._pending.append(_output.render(time.time(), "info", self.name, message, fields))
        if len(self._pending) == 1:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no event loop: nothing would flush later
                self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        if _output.stream is not None:
            _output.stream.write("\n".join(lines) + "\n")


class _Output:
    stream: Any = None
    render: Any = staticmethod(_text_line)


_output = _Output()


def configure(log_format: str = "text", level: str = "info") -> None:
    # Nothing here logs caller, thread or process details: skip collecting them per record.
    logging._srcfile = None  # type: ignore[attr-defined]
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    _output.stream = sys.stderr
    _output.render = _json_line if log_format == "json" else _text_line
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").disabled = True
