"""Values kept by the identity of the objects they were made from.

The language server parses a document again after each edit, but the statements an
edit did not touch are the same objects as before (:mod:`flowc.lsp.incremental`), and
what is made from them (the nodes that hold their spans, the transitions a rule lowers
to, a rule's text) is then the same too. :class:`ByIdentity` keeps such values from one
version to the next, keyed by the object's identity. Each entry holds its object, so an
identity is never that of an object since thrown away (Python reuses the numbers of
freed objects)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["ByIdentity"]

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """A value per object, found by the object's identity (``is``), not by equality. A
    value is never None (None is what :meth:`get` says of an object with no value: wrap a
    value that may be None, ``(value,)``).

    >>> kept: ByIdentity[list[int], str] = ByIdentity()
    >>> a, b = [1], [1]
    >>> kept.put(a, "made from a")
    >>> kept.get(a), kept.get(b), kept.reused  # b is equal to a, but not a
    ('made from a', None, 1)
    >>> kept.made(b, lambda: "made from b"), kept.made(b, lambda: "again"), kept.reused
    ('made from b', 'made from b', 2)
    >>> kept.keep_only([b]); kept.get(a), len(kept)
    (None, 1)
    """

    __slots__ = ("_of", "reused")

    def __init__(self) -> None:
        self._of: dict[int, tuple[K, V]] = {}
        #: how many values were found (for tests and benchmarks)
        self.reused = 0

    def get(self, obj: K) -> V | None:
        """The value kept for ``obj`` itself, or None."""
        found = self._of.get(id(obj))
        if found is None:
            return None
        # (its entry holds the object: no other object alive has its identity)
        self.reused += 1
        return found[1]

    def put(self, obj: K, value: V) -> None:
        self._of[id(obj)] = (obj, value)

    def made(self, obj: K, make: Callable[[], V]) -> V:
        """The value kept for ``obj``, made (and kept) if there is none."""
        found = self.get(obj)
        if found is None:
            found = make()
            self.put(obj, found)
        return found

    def keep_only(self, objs: Iterable[K]) -> None:
        """Forget every value but those of ``objs`` (the objects still in use)."""
        of = self._of
        self._of = {id(o): of[id(o)] for o in objs if id(o) in of}

    def clear(self) -> None:
        self._of = {}

    def __len__(self) -> int:
        return len(self._of)
