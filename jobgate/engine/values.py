"""Value classes without ``dataclasses``: compared, hashed and shown by their fields, in order.

Importing ``dataclasses`` (and the ``inspect`` and ``ast`` it imports), then building each class,
is a large part of the start-up of a one-file ``jobgate validate``; these bases give what a frozen
dataclass gave in a few lines. A subclass names its fields in ``FIELDS`` (in the order of its
``__init__``'s parameters: ``__reduce__`` and ``__repr__`` read them so) and lists them in
``__slots__``. A hot class may write its ``_key`` out (a tuple of its attributes) when a
measurement asks for it; the rest read ``FIELDS``.

The compiled build (mypyc) does not compile this module: a compiled class cannot have it as a base
without letting interpreted classes subclass it, so the compiled modules' few value classes keep
their methods written out.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

    M = TypeVar("M", bound="Member")


class Value:
    """Equal to an object of the same class with equal fields; hashed and shown by its fields."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self.FIELDS, self._key(), strict=True))
        return f"{self.__class__.__name__}({shown})"


class FrozenValue(Value):
    """A :class:`Value` whose fields cannot be assigned or deleted after ``__init__`` (which sets
    them with ``object.__setattr__``); pickled and copied through its constructor."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Read-only slots: pickle and copy would otherwise assign them.
        return self.__class__, self._key()


class Member:
    """One of a class's fixed members, as an Enum's, without importing ``enum`` (with the ``functools``
    and ``collections`` it imports, a quarter of the instructions of a one-file ``jobgate validate``).
    A subclass gives each member a ``name``; ``set_members`` makes the members the class's attributes
    of those names. Pickled as the member of its name, so that ``is`` holds for what ``-j`` workers send
    back."""

    __slots__ = ()
    name: str

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}.{self.name}>"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return getattr, (self.__class__, self.name)

    @classmethod
    def named(cls: type[M], name: str) -> M:
        """The member called ``name`` (KeyError when none is)."""
        member = getattr(cls, name, None)
        if not isinstance(member, cls):
            raise KeyError(name)
        return member


def set_members(cls: type[M], members: tuple[M, ...]) -> tuple[M, ...]:
    """``members`` as ``cls``'s attributes, each under its name; ``members`` itself, in order."""
    for member in members:
        setattr(cls, member.name, member)
    return members
