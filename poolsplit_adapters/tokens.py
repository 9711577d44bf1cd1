"""Token counting with tiktoken: offline, cached, batched, never 0.

Budgets are only as exact as the counter behind them, so the adapters count
with the tokenizer the model uses (tiktoken), not with ``len(text) // 4``.

**Offline.** tiktoken downloads an encoding's BPE file on first use. This
module never lets it: before asking tiktoken for an encoding it finds the file
locally, in this order, and checks its SHA-256 against the one tiktoken
expects (a damaged copy would make tiktoken delete it and download again):

1. the folder named by ``POOLSPLIT_TIKTOKEN_DIR``, files named as in
   tiktoken's cache (the SHA-1 of the download URL): an explicit choice wins;
2. the copies of ``o200k_base`` and ``cl100k_base`` shipped in this package
   (``poolsplit_adapters/data/tiktoken``, see its NOTICE.md: tiktoken is MIT
   licensed), so every extra that brings tiktoken works with no network;
3. tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or its
   default temp folder), where an earlier online use left other encodings;
4. the copies ``llama-index-core`` ships in its package data.

If none has it, `TokenizerUnavailable` says which file is missing and
how to provide it, instead of a network error from deep inside tiktoken.
`encoding_source` tells which folder served an encoding.

**Lazy.** Loading an encoding takes about a second (o200k_base), so no
default counter loads one before its first count: [`TiktokenCounter`][]
checks at construction that the file is there and loads it on the first
count, and LlamaIndex's global tokenizer is looked up at each count
(`DeferredCounter`). Building an adapter or a middleware, or the
graph module a LangGraph server imports, costs no tokenizer.

**Cached.** Counts are cached by content, so an unchanged entry is never
re-tokenised.

**Batched.** `TokenizerCounter.count_many` (what
[`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] calls once for a whole batch of new
entries) tokenises each distinct uncached text once, one by one in the
calling thread: tiktoken's own batch API and contiguous chunks on threads
were both measured and neither is faster here (see
`TokenizerCounter.count_many`).

**Never 0.** An empty text costs 1: a zero cost would exempt an entry from
every budget.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pathlib
import tempfile
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterable, List, Optional, Sized, Tuple

from .errors import ArgumentError, argument_error, check_call_form

__all__ = [
    "TiktokenCounter",
    "TokenizerCounter",
    "TokenizerUnavailable",
    "DeferredCounter",
    "default_counter",
    "encoding_source",
    "load_encoding",
    "locate_encoding",
]

DEFAULT_ENCODING = "o200k_base"
_LOCK = threading.Lock()
_ENCODINGS: Dict[str, Any] = {}
_SOURCES: Dict[str, pathlib.Path] = {}
_VERIFIED: Dict[pathlib.Path, bool] = {}
#: The encoding files shipped with the package (o200k_base, cl100k_base).
BUNDLED_DIR = pathlib.Path(__file__).resolve().parent / "data" / "tiktoken"
_CACHE_SIZE = 100_000


class TokenizerUnavailable(RuntimeError):
    """The tokenizer cannot be loaded without the network; the message says
    which file is missing and how to provide it."""


def _constructor_constants(name: str) -> Tuple[List[str], List[str]]:
    """(download URLs, expected SHA-256 digests) of encoding ``name``, read
    from tiktoken's own encoding constructor (nothing hard-coded here)."""
    from tiktoken_ext import openai_public

    constructors = openai_public.ENCODING_CONSTRUCTORS
    seen, todo, urls, digests = set(), [name], [], []
    while todo:
        current = todo.pop()
        if current in seen or current not in constructors:
            continue
        seen.add(current)
        code = constructors[current].__code__
        for const in code.co_consts:
            if isinstance(const, str) and const.startswith("http"):
                urls.append(const)
            elif isinstance(const, str) and len(const) == 64 and all(c in "0123456789abcdef" for c in const):
                digests.append(const)
        todo += [n for n in code.co_names if n in constructors]
    return urls, digests


def _tiktoken_cache_dir() -> Optional[pathlib.Path]:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return pathlib.Path(os.environ[var]) if os.environ[var] else None
    return pathlib.Path(tempfile.gettempdir()) / "data-gym-cache"


def _llama_index_dir() -> Optional[pathlib.Path]:
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return pathlib.Path(spec.origin).parent / "_static" / "tiktoken_cache"


def search_path() -> List[pathlib.Path]:
    """The folders searched for encoding files, in order (see the module
    docstring)."""
    folders = []
    if os.environ.get("POOLSPLIT_TIKTOKEN_DIR"):
        folders.append(pathlib.Path(os.environ["POOLSPLIT_TIKTOKEN_DIR"]))
    folders.append(BUNDLED_DIR)
    for folder in (_tiktoken_cache_dir(), _llama_index_dir()):
        if folder is not None:
            folders.append(folder)
    return folders


def _intact(file: pathlib.Path, digests: List[str]) -> bool:
    """The file exists and, when tiktoken names digests, matches one."""
    if file not in _VERIFIED:
        try:
            data = file.read_bytes()
        except OSError:
            return False
        _VERIFIED[file] = not digests or hashlib.sha256(data).hexdigest() in digests
    return _VERIFIED[file]


def _has_all(folder: pathlib.Path, urls: List[str], digests: List[str]) -> bool:
    files = [folder / hashlib.sha1(url.encode()).hexdigest() for url in urls]
    return all(f.is_file() for f in files) and all(_intact(f, digests) for f in files)


def locate_encoding(encoding: str = DEFAULT_ENCODING) -> pathlib.Path:
    """The folder holding an intact local copy of ``encoding``'s BPE file,
    found without loading it (tens of milliseconds the first time, for the
    checksum; loading is the slow part, about a second).

    Raises:
        TokenizerUnavailable: tiktoken is missing, the name is unknown, or no
            local copy of the encoding's BPE file exists.
    """
    try:
        import tiktoken
    except ImportError:
        raise TokenizerUnavailable("tiktoken is not installed: pip install 'poolsplit-adapters[tokens]'") from None
    urls, digests = _constructor_constants(encoding)
    if not urls:
        raise TokenizerUnavailable(
            "unknown tiktoken encoding %r (known: %s)" % (encoding, ", ".join(tiktoken.list_encoding_names()))
        )
    folder = next((d for d in search_path() if _has_all(d, urls, digests)), None)
    if folder is None:
        names = ", ".join(hashlib.sha1(u.encode()).hexdigest() for u in urls)
        raise TokenizerUnavailable(
            "no local copy of the %r tokenizer file and no network to fetch it (this package ships "
            "o200k_base and cl100k_base only). Fix: put the file(s) %s (tiktoken's cache names) in a "
            "folder named by POOLSPLIT_TIKTOKEN_DIR or TIKTOKEN_CACHE_DIR." % (encoding, names)
        )
    return folder


def load_encoding(encoding: str = DEFAULT_ENCODING) -> Any:
    """A ``tiktoken.Encoding`` loaded without touching the network.

    Raises:
        TokenizerUnavailable: tiktoken is missing, the name is unknown, or no
            local copy of the encoding's BPE file exists.
    """
    with _LOCK:
        if encoding in _ENCODINGS:
            return _ENCODINGS[encoding]
        import tiktoken

        folder = locate_encoding(encoding)  # the clear errors, before tiktoken's own
        # tiktoken reads its cache folder from the environment; point it at
        # the local copy for this one load (under the lock), then put things back.
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
        try:
            enc = tiktoken.get_encoding(encoding)
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
        _SOURCES[encoding] = folder
        _ENCODINGS[encoding] = enc
        return enc


def encoding_source(encoding: str = DEFAULT_ENCODING) -> pathlib.Path:
    """The folder whose file served ``encoding`` (loading it if needed)."""
    load_encoding(encoding)
    return _SOURCES[encoding]


def encoding_for_model(model: str) -> str:
    """The encoding name tiktoken uses for ``model`` (e.g. gpt-4o -> o200k_base)."""
    import tiktoken

    try:
        return str(tiktoken.encoding_name_for_model(model))
    except KeyError:
        raise TokenizerUnavailable("tiktoken does not know the model %r; pass encoding= instead" % model) from None


class TokenizerCounter:
    """A token counter (``counter(text) -> int``) over any tokenizer:
    cached by text, batched, thread-safe, never 0.

    Args:
        tokenize: text -> its tokens (anything with a length), e.g. a
            tokenizer's ``encode``.
        cache_size: how many distinct texts keep their count (LRU).

    Example:
        ```python
        counter = TokenizerCounter(my_tokenizer.encode)
        counter("Never force-push to main.")   # tokenised once, then cached
        counter.count_many(texts)              # the uncached ones in one batch
        ```
    """

    def __init__(self, tokenize: Callable[[str], Sized], *, cache_size: int = _CACHE_SIZE) -> None:
        self._tokenize = tokenize
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        #: How many texts were actually tokenised (cache misses), for tests and tuning.
        self.tokenized = 0

    def _measure(self, text: str) -> int:
        tokens = self._tokenize(text)
        try:
            return max(1, len(tokens))  # never 0: a zero cost is exempt from every budget
        except TypeError:  # said here: "object of type 'NoneType' has no len()" named no tokenizer
            raise ArgumentError(
                "the tokenizer %r must return the text's tokens (a list, anything with a length); it returned %s %r"
                % (self._tokenize, type(tokens).__name__, tokens)
            ) from None

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
        count = self._measure(text)
        with self._lock:
            self.tokenized += 1
            self._remember(text, count)
        return count

    def count_many(self, texts: Iterable[str]) -> List[int]:
        """Counts for many texts, in order; each distinct uncached text is
        tokenised once.

        One by one on purpose (``benchmarks/construction.py`` prints the
        figures). On 20k texts of ~210 characters (o200k_base, this
        project's 2 cores): tiktoken's ``encode_ordinary_batch`` is 2.5-5x
        slower (a thread-pool task per text). Contiguous chunks on 2
        threads (tiktoken releases the GIL) won 1.4x in a tokenising-only
        loop on a quiet machine (0.30 s against 0.41 s, medians of 12) but
        tied at load 7, and in whole constructions lost: a 20k MemoryIndex
        0.59 s against 0.51 s, 100k 2.85 s against 2.65 s, for 1.3-1.6x
        the CPU time.
        """
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh = {text: self._measure(text) for text in missing}
        with self._lock:
            self.tokenized += len(missing)
            for text, count in fresh.items():
                self._remember(text, count)
            # A batch larger than the cache evicts its own texts: ``fresh``
            # still holds them, and a text another thread evicted meanwhile
            # is measured again rather than failed.
            return [fresh[t] if t in fresh else self._cache.get(t) or self._measure(t) for t in texts]


class TiktokenCounter(TokenizerCounter):
    """A token counter (``counter(text) -> int``) backed by tiktoken.

    Args:
        encoding: tiktoken encoding name; default ``o200k_base``.
        model: a model name instead (``"gpt-4o"``); wins over ``encoding``.
        cache_size: how many distinct texts keep their count (LRU).

    The counter is thread-safe, never returns 0, and counts special-token
    text (``<|endoftext|>``) as ordinary text rather than raising, since
    memory content is data, not a prompt template.

    **Lazy.** Construction only checks that the encoding is known and its
    file is on this machine (a bad name or a missing file fails here, with
    `TokenizerUnavailable`); the encoding itself, about a second to
    load, loads on the first count (or [`encoding`][]). So building an
    adapter, or the graph a LangGraph server imports, costs no tokenizer.

    Example:
        ```python
        counter = TiktokenCounter(model="gpt-4o")
        index = MemoryIndex(entries, token_counter=counter)   # one batch for every text
        ```
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING, *, model: Optional[str] = None, cache_size: int = _CACHE_SIZE):
        self.encoding_name = encoding_for_model(model) if model else encoding
        locate_encoding(self.encoding_name)
        super().__init__(self._first_encode, cache_size=cache_size)

    @property
    def encoding(self) -> Any:
        """The ``tiktoken.Encoding``, loaded now if no count has loaded it."""
        return load_encoding(self.encoding_name)

    def _first_encode(self, text: str) -> List[int]:
        # The first count loads the encoding; later ones call it directly.
        encode: Callable[[str], List[int]] = self.encoding.encode_ordinary
        self._tokenize = encode
        return encode(text)

    def __repr__(self) -> str:
        return "TiktokenCounter(%r)" % self.encoding_name


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


# -- counters over another tokenizer (LlamaIndex) ------------------------------------------


class DeferredCounter:
    """A counter (``counter(text) -> int``, with ``count_many``) that asks
    ``resolve()`` for the counter to use at each count instead of at
    construction: a default tokenizer that takes a second to load then loads
    on the first count, not when an adapter is built.

    Args:
        resolve: returns the counter to delegate to; called on every count,
            so it must be cheap once warm (a cached lookup).

    Example:
        ```python
        counter = DeferredCounter(lambda: TiktokenCounter("cl100k_base"))
        counter("Never force-push to main.")   # resolved and counted here
        ```
    """

    def __init__(self, resolve: Callable[[], Callable[[str], int]]) -> None:
        self._resolve = resolve

    @property
    def counter(self) -> Callable[[str], int]:
        """The counter counts go to now (resolving it, and loading its
        tokenizer, if needed)."""
        return self._resolve()

    def __call__(self, text: str) -> int:
        return self._resolve()(text)

    def count_many(self, texts: Iterable[str]) -> List[int]:
        """Counts for many texts, in order, in one batch when the counter
        batches; no texts resolve no tokenizer."""
        texts = list(texts)
        if not texts:
            return []
        counter = self._resolve()
        many = getattr(counter, "count_many", None)
        return list(many(texts)) if many is not None else [counter(text) for text in texts]


def _llama_index_global() -> Callable[[str], int]:
    from llama_index.core.utils import get_tokenizer

    return counter_from(get_tokenizer())


_LLAMA_INDEX = DeferredCounter(_llama_index_global)


def llama_index_counter() -> Callable[[str], int]:
    """Counts with LlamaIndex's global tokenizer, the one ``Memory`` uses by
    default, so budgets and ``Memory``'s own arithmetic agree.

    One shared `DeferredCounter`: LlamaIndex loads that tokenizer
    (tiktoken ``cl100k_base``, under a second) on its first use, so it is
    looked up at each count, never when an adapter is built. A tokenizer set
    later (``Settings.tokenizer = ...``) is the one counted with from then
    on; each tokenizer keeps its own cache (`counter_from`)."""
    return _LLAMA_INDEX


def counter_from(tokenizer_fn: Callable[[str], list[Any]]) -> Callable[[str], int]:
    """A never-0 counter over ``tokenizer_fn``, cached by text with a bound
    (a long chat would otherwise grow the cache by every line it flushes).
    One counter per tokenizer: every retriever, postprocessor and memory
    over LlamaIndex's global tokenizer shares one cache."""
    if not callable(tokenizer_fn):
        raise argument_error("tokenizer_fn", "callable (text -> its tokens)", tokenizer_fn)
    check_call_form(tokenizer_fn, "tokenizer_fn", "tokenizer_fn(text)", "")
    try:
        return _shared_counter(tokenizer_fn)
    except TypeError:  # an unhashable tokenizer object: a counter of its own
        return _counter(tokenizer_fn)


def _counter(tokenizer_fn: Callable[[str], list[Any]]) -> Callable[[str], int]:
    # A TokenizerCounter has count_many: MemoryIndex counts a whole memory
    # in one batch, each distinct text once.
    return TokenizerCounter(tokenizer_fn)


_shared_counter = functools.lru_cache(maxsize=8)(_counter)
