"""Entry vectors cached by content hash, so nothing is embedded twice.

Embedding is the expensive step (a model call per batch, or a paid API
call), and an entry's vector depends only on its text and the model. The
cache is therefore keyed by `content_key` = hash of (model id, text):
an edited entry gets a new key, an unchanged one is never re-embedded, and
vectors of two models never mix.

`VectorCache` is the protocol (two batch methods) that
``EmbeddingScorer`` uses; `InMemoryVectorCache` is the default. A
durable store implements the same two methods over its own table and uses
`encode_vector` / `decode_vector` for the bytes, so a restart does
not re-embed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Dict, Mapping, Optional, Protocol, Sequence

import numpy as np

from .similarity import FloatArray

__all__ = ["VectorCache", "InMemoryVectorCache", "content_key", "encode_vector", "decode_vector"]


def content_key(text: str, model_id: str) -> str:
    """Cache key of ``text`` embedded by the model named ``model_id``
    (SHA-256, hex): the same text under another model is another key. A
    lone surrogate is hashed as it is (``surrogatepass``; every other text
    keeps its key): strict UTF-8 failed every ranking of a store that held
    one such text with a ``UnicodeEncodeError`` from here."""
    digest = hashlib.sha256()
    digest.update(model_id.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def encode_vector(vector: FloatArray) -> bytes:
    """Bytes of a quantised vector for a durable store: little-endian int16
    (its components are integers of magnitude at most 4096, see
    `levels`)."""
    return np.asarray(vector).astype("<i2").tobytes()


def decode_vector(data: bytes) -> FloatArray:
    """The quantised vector `encode_vector` wrote."""
    return np.frombuffer(data, dtype="<i2").astype(np.float32)


class VectorCache(Protocol):
    """Where entry vectors are kept between calls (and, for a durable store,
    between processes). Keys come from `content_key`; values are
    quantised vectors (1-D float32). Both methods work on batches because a
    durable store answers a batch in one query."""

    def get_many(self, keys: Sequence[str]) -> Dict[str, FloatArray]:
        """The vectors of the keys that are cached (misses are left out)."""
        ...

    def put_many(self, items: Mapping[str, FloatArray]) -> None:
        """Store vectors under their keys."""
        ...


class InMemoryVectorCache:
    """A thread-safe dict of vectors, optionally bounded (least recently used
    vectors go first).

    Args:
        max_items: bound on the number of vectors; None (default) keeps
            every vector, which suits a cache owned by one store: it grows
            with the store, and the store can `discard` what it drops.

    Example:
        >>> import numpy as np
        >>> cache = InMemoryVectorCache(max_items=2)
        >>> cache.put_many({"a": np.ones(3, dtype=np.float32)})
        >>> sorted(cache.get_many(["a", "b"]))
        ['a']
    """

    def __init__(self, max_items: Optional[int] = None) -> None:
        if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1):
            raise ValueError("max_items must be a positive int or None, got %r" % (max_items,))
        self.max_items = max_items
        self._items: OrderedDict[str, FloatArray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, keys: Sequence[str]) -> Dict[str, FloatArray]:
        found: Dict[str, FloatArray] = {}
        with self._lock:
            for key in keys:
                vector = self._items.get(key)
                if vector is not None:
                    found[key] = vector
                    if self.max_items is not None:
                        self._items.move_to_end(key)
        return found

    def put_many(self, items: Mapping[str, FloatArray]) -> None:
        with self._lock:
            for key, vector in items.items():
                frozen = np.array(vector, dtype=np.float32)
                frozen.setflags(write=False)  # shared by every caller: nobody may edit it
                self._items[key] = frozen
                self._items.move_to_end(key)
            if self.max_items is not None:
                while len(self._items) > self.max_items:
                    self._items.popitem(last=False)

    def discard(self, keys: Sequence[str]) -> None:
        """Forget vectors (for instance of entries the store deleted)."""
        with self._lock:
            for key in keys:
                self._items.pop(key, None)
