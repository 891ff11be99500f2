"""A manifest file's documents, as kubectl's YAML reader splits them, and the limits on reading one.

A file is split at ``---`` lines into chunks, each with the line of the file it starts on;
``offline.loader`` reads each one's data (its fast path, or ``offline.exact_yaml``, the exact
path). Both readers refuse what kubectl cannot turn into JSON with a ``LoadError``, and both write
numbers as Go's JSON does (``json_number``).

Every input is bounded (the limits are in docs/offline.md): a document over
``MAX_DOCUMENT_BYTES``, nesting deeper than ``MAX_DEPTH``, a number longer than
``MAX_NUMBER_DIGITS`` or excessive aliasing is refused with a one-line message
(``MAX_FILE_BYTES`` is enforced where files are read, ``offline.sources``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_FILE_BYTES = 32 * 1024 * 1024
# The apiserver refuses request bodies over 3 MiB; a manifest larger than that cannot be applied.
MAX_DOCUMENT_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100
MAX_NUMBER_DIGITS = 1000

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# math.inf: the math module is a shared library that a one-file check need not load for this.
INFINITY = float("inf")

# What document_starts finds (a test holds it to the pattern).
_DOCUMENT_START = r"(?m)^---(?=[ \t\r]|$)"
# What may follow a separator's ---: a blank, a line's end, the text's end ("").
_AFTER_SEPARATOR = ("", " ", "\t", "\r", "\n")


class LoadError(Exception):
    """A document that kubectl could not turn into JSON, or one past a stated limit."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class NeedsExactPath(Exception):
    """The fast path cannot tell what kubectl reads here: the exact path reads the document."""


class Chunk:
    """One document's text and the line (1-based) of the file it starts on."""

    # A plain class, not a dataclass: importing dataclasses costs a one-file check a fifth of
    # its start-up (it imports inspect, ast, dis and tokenize).
    __slots__ = ("first_line", "text")

    def __init__(self, text: str, first_line: int) -> None:
        self.text = text
        self.first_line = first_line

    def __repr__(self) -> str:
        return f"Chunk(text={self.text!r}, first_line={self.first_line!r})"

    @property
    def content_line(self) -> int:
        """The first line that is not blank or a comment: where the document starts for a reader."""
        position, line = 0, self.first_line
        while position < len(self.text):
            end = self.text.find("\n", position)
            end = len(self.text) if end < 0 else end
            stripped = self.text[position:end].strip()
            if stripped and not stripped.startswith(("#", "%")):
                return line
            position, line = end + 1, line + 1
        return self.first_line


def document_starts(text: str) -> Iterator[int]:
    """Where ``re.finditer(_DOCUMENT_START, text)`` matches: each ``---`` at a line's start followed by a
    blank, a line's end or the text's end. Found with str.find: importing re costs a one-file check
    more than its rules."""
    position = text.find("---")
    while position >= 0:
        if (position == 0 or text[position - 1] == "\n") and text[position + 3 : position + 4] in _AFTER_SEPARATOR:
            yield position
            position = text.find("---", position + 3)
        else:
            position = text.find("---", position + 1)


def split_documents(text: str) -> list[Chunk]:
    """Split at ``---`` lines, as kubectl's YAML reader does (only a comment may follow them)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\n---" not in text and not text.startswith("---"):
        return [Chunk(text, 1)]
    chunks: list[Chunk] = []
    start, line = 0, 1
    for separator in document_starts(text):
        end_of_line = text.find("\n", separator + 3)
        end_of_line = len(text) if end_of_line < 0 else end_of_line
        rest = text[separator + 3 : end_of_line].strip()
        separator_line = line + text.count("\n", start, separator)
        if rest and not rest.startswith("#"):
            raise LoadError("invalid YAML document separator: only a comment may follow ---", separator_line)
        chunks.append(Chunk(text[start:separator], line))
        start, line = end_of_line + 1, separator_line + 1
    chunks.append(Chunk(text[start:], line))
    return chunks


def json_number(value: float) -> int | float:
    """A float as Go's JSON writes it; JSON has no infinity or NaN (``NeedsExactPath``)."""
    if not -INFINITY < value < INFINITY:  # infinite, or NaN (no comparison holds)
        raise NeedsExactPath
    # Go's JSON writes an integral float without a fraction; the apiserver reads it as an integer.
    if value.is_integer() and INT64_MIN <= value <= INT64_MAX and abs(value) < 1e21:
        return int(value)
    return value
