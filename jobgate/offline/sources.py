"""Reading manifests for the offline commands: files, directories, stdin; multi-document YAML.

Values are read as kubectl reads them (``offline.loader``); a document's lines are found
only when it has something to report. Hostile input is bounded: special files (FIFOs,
devices), files over ``MAX_FILE_BYTES``, undecodable bytes, symlink loops and overlong
paths are each refused with a one-line message, never a traceback or a hang.
"""

from __future__ import annotations

import os
import stat
import sys

from jobgate.engine.fielderrors import FieldPath
from jobgate.offline.documents import MAX_FILE_BYTES, Chunk, LoadError, split_documents
from jobgate.offline.loader import Locator, load_document

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class SourceError(Exception):
    """A path that cannot be read or a document that cannot be parsed (exit status 2)."""

    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{display_name(self.source)}:{self.line}" if self.line else display_name(self.source)
        return f"{where}: {self.message}"


class Document:
    """One document of a source, as read (plain class: see Chunk in documents.py)."""

    __slots__ = ("chunk", "data", "index", "locator", "notes", "source")

    def __init__(
        self, source: str, index: int, chunk: Chunk, data: Any, notes: list[tuple[int, str]] | None = None
    ) -> None:
        self.source = source
        self.index = index
        self.chunk = chunk
        self.data = data  # the document as plain JSON data, as kubectl sends it
        self.notes = [] if notes is None else notes  # (line, warning) from reading it
        # Documents are made of chunks load_document read without error (iter_documents).
        self.locator = Locator(chunk, loaded=True)

    @property
    def line(self) -> int:
        return self.locator.line

    def line_of(self, path: FieldPath) -> int:
        """Line of the deepest part of ``path`` that exists in the document."""
        return self.locator.line_of(path)

    @property
    def tree(self) -> Any:
        """The document as ruamel's round-trip tree (comments, key order), for ``jobgate default``."""
        from ruamel.yaml import YAML

        yaml = YAML(typ="rt")
        yaml.allow_duplicate_keys = True  # already refused by the loader
        return yaml.load(self.chunk.text)


def iter_documents(text: str, source: str) -> Iterator[Document]:
    """Every document of ``text``, parsed one at a time; SourceError at the first that fails."""
    try:
        chunks = split_documents(text)
    except LoadError as exc:
        raise SourceError(source, exc.message, exc.line) from None
    for index, chunk in enumerate(chunks):
        notes: list[tuple[int, str]] = []
        try:
            data = load_document(chunk, notes)
        except LoadError as exc:
            raise SourceError(source, exc.message, exc.line) from None
        yield Document(source, index, chunk, data, notes)


def parse_documents(text: str, source: str) -> list[Document]:
    return list(iter_documents(text, source))


def expand_paths(paths: list[str]) -> Iterator[str]:
    """Files as given; directories walked recursively for manifests, in sorted order.

    Symbolic links to directories are not followed (no loops); a path that cannot be
    examined raises SourceError.
    """
    for raw in paths:
        if raw == STDIN:
            yield STDIN
            continue
        try:
            info = os.stat(raw)
        except OSError as exc:
            raise SourceError(raw, _os_message(exc)) from None
        except ValueError:  # embedded NUL
            raise SourceError(raw, "invalid path") from None
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(raw)
        else:
            yield raw


def _walk(directory: str) -> Iterator[str]:
    found: list[str] = []
    errors: list[OSError] = []
    for root, dirs, files in os.walk(directory, onerror=errors.append, followlinks=False):
        dirs.sort()
        found.extend(os.path.join(root, name) for name in files if name.endswith(MANIFEST_SUFFIXES))
    if errors:
        exc = errors[0]
        raise SourceError(exc.filename or directory, _os_message(exc))
    yield from sorted(found)


def _os_message(exc: OSError) -> str:
    message = exc.strerror or str(exc)
    return message[:1].lower() + message[1:]


def read_source(source: str) -> str:
    """The text of a file or of stdin, at most MAX_FILE_BYTES, UTF-8; regular files only."""
    if source == STDIN:
        raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1) if hasattr(sys.stdin, "buffer") else None
        if raw is None:  # a text stream without a buffer (tests)
            text = sys.stdin.read(MAX_FILE_BYTES + 1)
            if len(text) > MAX_FILE_BYTES:
                raise SourceError(source, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
            return text
        return _decode(source, raw)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
        descriptor = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SourceError(source, f"cannot read: {_os_message(exc)}") from None
    except ValueError:
        raise SourceError(source, "cannot read: invalid path") from None
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError(source, "is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(source, "not a regular file (FIFO, socket or device)")
        if info.st_size > MAX_FILE_BYTES:
            raise SourceError(source, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        raw = _read_bounded(descriptor, info.st_size)
    except OSError as exc:
        raise SourceError(source, f"cannot read: {_os_message(exc)}") from None
    finally:
        os.close(descriptor)
    return _decode(source, raw)


def _read_bounded(descriptor: int, expected: int) -> bytes:
    """At most MAX_FILE_BYTES + 1 bytes, asking for the size stat gave (asking for the maximum
    would allocate 32 MiB per file); files that report no size (/proc) are read in pieces."""
    first = os.read(descriptor, expected + 1 if expected else 65536)
    if len(first) <= expected or not first:
        return first
    pieces = [first]
    total = len(first)
    while total <= MAX_FILE_BYTES:
        piece = os.read(descriptor, min(1 << 20, MAX_FILE_BYTES + 1 - total))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def _decode(source: str, raw: bytes) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise SourceError(source, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SourceError(source, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start}", line) from None


def display_name(source: str) -> str:
    """The name printed for a source: stdin by name, anything unprintable escaped."""
    if source == STDIN:
        return "<stdin>"
    return printable(source)


def printable(text: str) -> str:
    """Text safe to print on any terminal encoding: lone surrogates and controls escaped."""
    if text.isprintable():
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    return "".join(ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape", "backslashreplace").decode("ascii")
