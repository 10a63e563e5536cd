"""What publish and publish_batch return (0.6.0, deduplication keys): Published, a seq
that is still an int, with whether the publish was a duplicate; PublishedBatch, the
first seq of a batch (an int, as before) with each event's outcome in add order.

The C library reports a duplicate as MQ_DUPLICATE; the SWIG shims (mqs_publish,
mqs_batch_outcome) give it as MQ_OK with the seq negated, which _of turns back."""

from __future__ import annotations

from typing import Any, Optional, Tuple


class Published(int):
    """Queue.publish's result: the event's seq, an int (so code that used the seq as an
    int keeps working: it compares, hashes, prints and adds as the seq), and
    ``duplicate``: True when the publish carried a ``dedup_key`` that an event of the
    queue already holds, so nothing was added and the seq is that event's."""

    __slots__ = ()
    duplicate: bool = False
    """whether nothing was added: the key was taken, and ``seq`` is the first publish's"""

    def __new__(cls, seq: int, duplicate: bool = False) -> "Published":
        return int.__new__(_Duplicate if duplicate else Published, seq)

    @property
    def seq(self) -> int:
        """The event's seq, as a plain int."""
        return int(self)

    @classmethod
    def _of(cls, raw: int) -> "Published":
        """From a shim's seq: negative for a duplicate of the event -raw."""
        return int.__new__(_Duplicate, -raw) if raw < 0 else int.__new__(Published, raw)

    __str__ = int.__repr__  # str() and f-strings show the seq, as they did for the int

    def __repr__(self) -> str:
        return "Published(seq=%d, duplicate=%r)" % (self, self.duplicate)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (Published, (int(self), self.duplicate))


class _Duplicate(Published):
    """A Published whose duplicate is True (a class attribute: no per-seq storage)."""

    __slots__ = ()
    duplicate = True


class PublishedBatch(int):
    """Queue.publish_batch's result: the first event's seq, an int, as publish_batch
    returned before 0.6.0 (in a queue of one partition, without duplicates, event i has
    seq first + i), and ``outcomes``: each event's Published, in add order (a
    duplicate's seq is the event that holds its key, not first + i; over partitions,
    0.8.0, each event's seq is its partition's). ``added`` counts the events added."""

    def __new__(cls, first: int, count: int, raw: Optional[Tuple[int, ...]] = None) -> "PublishedBatch":
        self = int.__new__(cls, first)
        object.__setattr__(self, "_count", count)
        object.__setattr__(self, "_raw", raw)  # the shim's seqs, when the batch had keys or partitions
        object.__setattr__(self, "_outcomes", None)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("PublishedBatch is immutable")

    @property
    def first_seq(self) -> int:
        """The first seq, as a plain int."""
        return int(self)

    @property
    def outcomes(self) -> Tuple[Published, ...]:
        """Each event's Published (seq, duplicate), in add order."""
        out = self._outcomes
        if out is None:
            if self._raw is None:  # no keys, one partition: every event was added, in order
                first = int(self)
                out = tuple(int.__new__(Published, first + i) for i in range(self._count))
            else:
                out = tuple(Published._of(raw) for raw in self._raw)
            object.__setattr__(self, "_outcomes", out)
        return out

    @property
    def added(self) -> int:
        """How many events the publish added (the others were duplicates)."""
        if self._raw is None:
            return self._count
        return sum(1 for raw in self._raw if raw >= 0)

    __str__ = int.__repr__

    def __repr__(self) -> str:
        return "PublishedBatch(first_seq=%d, events=%d, added=%d)" % (self, self._count, self.added)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (PublishedBatch, (int(self), self._count, self._raw))
