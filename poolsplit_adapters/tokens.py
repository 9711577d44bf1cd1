"""Token counting with tiktoken: offline, cached, never 0.

Budgets are only as exact as the counter behind them, so the adapters count
with the tokenizer the model uses (tiktoken), not with ``len(text) // 4``.

**Offline.** tiktoken downloads an encoding's BPE file on first use. This
module never lets it: before asking tiktoken for an encoding it finds the file
locally, in this order:

1. tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or its
   default temp folder), where an earlier online use left it;
2. the folder named by ``POOLSPLIT_TIKTOKEN_DIR``, files named as in tiktoken's
   cache (the SHA-1 of the download URL);
3. the copies of ``cl100k_base`` and ``o200k_base`` that ``llama-index-core``
   ships in its package data (installed by the ``llama-index`` and ``all``
   extras).

If none has it, :class:`TokenizerUnavailable` says which file is missing and
how to provide it, instead of a network error from deep inside tiktoken.

**Cached.** Counts are cached by content, so an unchanged entry is never
re-tokenised; :meth:`TiktokenCounter.count_many` tokenises a batch of new
texts in one pass under one lock acquisition.

**Never 0.** An empty text costs 1: a zero cost would exempt an entry from
every budget.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import tempfile
import threading
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Optional

__all__ = ["TiktokenCounter", "TokenizerUnavailable", "load_encoding", "default_counter"]

DEFAULT_ENCODING = "o200k_base"
_LOCK = threading.Lock()
_ENCODINGS: Dict[str, Any] = {}


class TokenizerUnavailable(RuntimeError):
    """The tokenizer cannot be loaded without the network; the message says
    which file is missing and how to provide it."""


def _blob_urls(name: str) -> List[str]:
    """The download URLs tiktoken would fetch for ``name``, read from its
    encoding constructor (so no URL is hard-coded here)."""
    from tiktoken_ext import openai_public

    constructors = openai_public.ENCODING_CONSTRUCTORS
    seen, todo, urls = set(), [name], []
    while todo:
        current = todo.pop()
        if current in seen or current not in constructors:
            continue
        seen.add(current)
        code = constructors[current].__code__
        urls += [c for c in code.co_consts if isinstance(c, str) and c.startswith("http")]
        todo += [n for n in code.co_names if n in constructors]
    return urls


def _tiktoken_cache_dir() -> Optional[pathlib.Path]:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return pathlib.Path(os.environ[var]) if os.environ[var] else None
    return pathlib.Path(tempfile.gettempdir()) / "data-gym-cache"


def _bundled_dirs() -> List[pathlib.Path]:
    dirs = []
    if os.environ.get("POOLSPLIT_TIKTOKEN_DIR"):
        dirs.append(pathlib.Path(os.environ["POOLSPLIT_TIKTOKEN_DIR"]))
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        dirs.append(pathlib.Path(spec.origin).parent / "_static" / "tiktoken_cache")
    return dirs


def _has_all(folder: Optional[pathlib.Path], urls: List[str]) -> bool:
    if folder is None:
        return False
    return all((folder / hashlib.sha1(url.encode()).hexdigest()).is_file() for url in urls)


def load_encoding(encoding: str = DEFAULT_ENCODING) -> Any:
    """A ``tiktoken.Encoding`` loaded without touching the network.

    Raises:
        TokenizerUnavailable: tiktoken is missing, the name is unknown, or no
            local copy of the encoding's BPE file exists.
    """
    with _LOCK:
        if encoding in _ENCODINGS:
            return _ENCODINGS[encoding]
        try:
            import tiktoken
        except ImportError:
            raise TokenizerUnavailable("tiktoken is not installed: pip install 'poolsplit-adapters[tokens]'") from None
        urls = _blob_urls(encoding)
        if not urls:
            raise TokenizerUnavailable(
                "unknown tiktoken encoding %r (known: %s)" % (encoding, ", ".join(tiktoken.list_encoding_names()))
            )
        if _has_all(_tiktoken_cache_dir(), urls):
            enc = tiktoken.get_encoding(encoding)
        else:
            folder = next((d for d in _bundled_dirs() if _has_all(d, urls)), None)
            if folder is None:
                names = ", ".join(hashlib.sha1(u.encode()).hexdigest() for u in urls)
                raise TokenizerUnavailable(
                    "no local copy of the %r tokenizer file and no network to fetch it. Fix: install "
                    "'poolsplit-adapters[llama-index]' (llama-index-core ships cl100k_base and o200k_base), "
                    "or put the file(s) %s (tiktoken's cache names) in a folder named by "
                    "POOLSPLIT_TIKTOKEN_DIR or TIKTOKEN_CACHE_DIR." % (encoding, names)
                )
            # tiktoken reads its cache folder from the environment; point it
            # at the local copy for this one load, then put things back.
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
            try:
                enc = tiktoken.get_encoding(encoding)
            finally:
                if previous is None:
                    del os.environ["TIKTOKEN_CACHE_DIR"]
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = previous
        _ENCODINGS[encoding] = enc
        return enc


def encoding_for_model(model: str) -> str:
    """The encoding name tiktoken uses for ``model`` (e.g. gpt-4o -> o200k_base)."""
    import tiktoken

    try:
        return str(tiktoken.encoding_name_for_model(model))
    except KeyError:
        raise TokenizerUnavailable("tiktoken does not know the model %r; pass encoding= instead" % model) from None


class TiktokenCounter:
    """A token counter (``counter(text) -> int``) backed by tiktoken.

    Args:
        encoding: tiktoken encoding name; default ``o200k_base``.
        model: a model name instead (``"gpt-4o"``); wins over ``encoding``.
        cache_size: how many distinct texts keep their count (LRU).

    The counter is thread-safe, never returns 0, and counts special-token
    text (``<|endoftext|>``) as ordinary text rather than raising, since
    memory content is data, not a prompt template.
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING, *, model: Optional[str] = None, cache_size: int = 100_000):
        self.encoding_name = encoding_for_model(model) if model else encoding
        self._encoding = load_encoding(self.encoding_name)
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        #: How many texts were actually tokenised (cache misses), for tests and tuning.
        self.tokenized = 0

    def __repr__(self) -> str:
        return "TiktokenCounter(%r)" % self.encoding_name

    def _remember(self, text: str, count: int) -> None:
        self._cache[text] = count
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def __call__(self, text: str) -> int:
        with self._lock:
            count = self._cache.get(text)
            if count is not None:
                self._cache.move_to_end(text)
                return count
        count = max(1, len(self._encoding.encode_ordinary(text)))
        with self._lock:
            self.tokenized += 1
            self._remember(text, count)
        return count

    def count_many(self, texts: Iterable[str]) -> List[int]:
        """Counts for many texts; the uncached ones are tokenised in one batch."""
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            # One by one on purpose: tiktoken's own batch call goes through a
            # thread pool that measured 4x slower here (2 cores, short texts).
            encode = self._encoding.encode_ordinary
            counts = [max(1, len(encode(text))) for text in missing]
            with self._lock:
                self.tokenized += len(missing)
                for text, count in zip(missing, counts):
                    self._remember(text, count)
                fresh = dict(zip(missing, counts))
        else:
            fresh = {}
        with self._lock:
            return [fresh[t] if t in fresh else self._cache.get(t) or self._count_evicted(t) for t in texts]

    def _count_evicted(self, text: str) -> int:
        # Only reached when a batch larger than the cache evicted its own
        # texts; count directly rather than fail.
        return max(1, len(self._encoding.encode_ordinary(text)))


_DEFAULT: Optional[TiktokenCounter] = None
_DEFAULT_LOCK = threading.Lock()


def default_counter() -> TiktokenCounter:
    """The shared ``o200k_base`` counter the adapters use by default (one
    cache for the whole process, so a text is tokenised once)."""
    global _DEFAULT
    if _DEFAULT is None:
        counter = TiktokenCounter()
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = counter
    return _DEFAULT
