"""Log lines for the long-running commands: plain ``key=value`` text, or one JSON object per line.

Structured fields travel in ``extra={"fields": {...}}``; objects are never logged whole.
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any

import orjson


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _quoted(value: Any) -> str:
    text = str(value)
    if text and all(c not in text for c in ' "=') and text.isprintable():
        return text
    return orjson.dumps(text).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = getattr(record, "fields", {})
        line = f"{_timestamp(record)} {record.levelname.lower():5} {record.name}: {record.getMessage()}"
        if fields:
            line += " " + " ".join(f"{k}={_quoted(v)}" for k, v in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        document.update(getattr(record, "fields", {}))
        if record.exc_info:
            document["error"] = self.formatException(record.exc_info)
        return orjson.dumps(document, default=str).decode()


def configure(log_format: str = "text", level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").disabled = True
