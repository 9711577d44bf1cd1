"""A batch of texts turned into term codes, each distinct word decided once.

[`TermPostings`][] needs, for a store's texts, which term each
of their words counts as and in which text: codes, not strings. Analysing
text by text ([`terms`][poolsplit_adapters.relevance.Analyzer.terms]) costs a regular expression, a
language vote, a lookup per token and a tuple per text: about 20 µs a text,
three times what the index pays to hold the entry at all. A store repeats
the same few thousand words, so `TermCoder` moves every decision it
can from the token to the distinct word:

1. **Split** the batch's ASCII texts in one pass (`join_texts`):
   joined with a separator, folded to lower case and every byte that is not
   a letter or a digit made a space by one ``bytes.translate``, split on
   spaces. For an ASCII text this is `words` exactly (NFKC
   changes no ASCII character, ``casefold`` is ``lower``, a word is a run
   of letters and digits). [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex] splits
   the same way for the core's word rule, so when it builds both at once it
   hands its token ids over and the batch is split once (a
   `Vocabulary` shared by both).
2. **Code** each token by one dict lookup (at C speed); a word seen for the
   first time records what is independent of the text: whether it is a
   lone letter (never a word), and which candidate languages list it as a
   stopword.
3. **Vote** each text's language with numpy over its stopword tokens: the
   count per candidate language, the first of the most (and the default
   when none), as `detect_language` decides it.
4. **Term** of a word in a language: looked up once per (language, word) in
   the same table the per-text analysis uses (stem, or dropped as a
   stopword), then per token a gather from that table.

A text that is not ASCII takes the per-text analysis: its script decides
its language and its words need Unicode rules. Both routes give every text
exactly its [`terms`][poolsplit_adapters.relevance.Analyzer.terms] as a multiset, which
``tests/unit/test_twins.py`` checks on generated text.
"""

from __future__ import annotations

import array
import itertools
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from .words import STOPWORDS, Analyzer, _cached_terms, _terms_table, cache_key

__all__ = ["TermCoder", "Codes", "Vocabulary", "SEPARATOR", "WORD_BYTES", "RUN_BYTES", "byte_runs", "join_texts"]

#: Stands between two texts of a joined batch: a token of its own, never
#: part of a word (in a text it reads as a space, as every word rule reads it).
SEPARATOR = "\x01"
_JOIN = " %s " % SEPARATOR
# Letters, digits and the separator kept (upper-case letters lowered), any other byte a space.
_KEPT = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789" + SEPARATOR.encode())
WORD_BYTES = bytes(byte + 32 if 65 <= byte <= 90 else byte if byte in _KEPT else 32 for byte in range(256))
#: One text's table: letters and digits kept, every other byte (the
#: separator too) a space.
RUN_BYTES = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256))


def byte_runs(text: str, table: bytes = WORD_BYTES) -> List[bytes]:
    """The byte runs of ``text``: lower-cased, a non-ASCII character made
    ``?`` (then a space), every byte the ``table`` does not keep a space,
    split. The one ASCII splitter of the package: with `WORD_BYTES` a batch
    joined by `join_texts` (the separator its own token), with `RUN_BYTES`
    one text (`fastpath.word_runs`). Its runs are the core's
    ``significant_words`` before the length and stopword filter, and
    `words` on an ASCII text.

    Example:
        >>> byte_runs("Refunds, ROUNDED é")
        [b'refunds', b'rounded']
    """
    return text.lower().encode("ascii", "replace").translate(table).split()


def join_texts(texts: Sequence[str]) -> str:
    """``texts`` joined by the spaced `SEPARATOR` (a separator inside
    a text made a space first), so one split of the folded join yields each
    text's runs of letters and digits with a separator token between texts:
    for an ASCII join that split is
    ``joined.encode("ascii").translate(WORD_BYTES).split()``.

    Example:
        >>> join_texts(["Refunds, rounded", "the\\x01gate"]).encode().translate(WORD_BYTES).split()
        [b'refunds', b'rounded', b'\\x01', b'the', b'gate']
    """
    joined = _JOIN.join(texts)
    if joined.count(SEPARATOR) >= len(texts):
        joined = _JOIN.join([text.replace(SEPARATOR, " ") for text in texts])
    return joined


class Vocabulary(Protocol):
    """ASCII token -> its id, the next id for a token not seen yet (the
    separator is id 0); ``words[id]`` is the token as text. The index's word
    codes are one, so a batch it has split is coded once for both rules."""

    words: List[str]

    def __getitem__(self, token: bytes) -> int: ...


class Codes(Dict[str, int]):
    """term -> its code, the next code for a term not seen yet."""

    def __missing__(self, term: str) -> int:
        code = self[term] = len(self)
        return code


class _Terms(Dict[str, int]):
    """The coder's own term ids (`Codes`), each term's name kept in
    id order (``names``) and its caller's code, -1 until a text holds it
    (``coded``)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: List[str] = []
        self.coded = array.array("q")

    def __missing__(self, term: str) -> int:
        code = self[term] = len(self.names)
        self.names.append(term)
        self.coded.append(-1)
        return code


class _Ids(Dict[bytes, int]):
    """A `Vocabulary` of the coder's own."""

    def __init__(self) -> None:
        super().__init__({SEPARATOR.encode(): 0})
        self.words: List[str] = [SEPARATOR]

    def __missing__(self, token: bytes) -> int:
        code = self[token] = len(self.words)
        self.words.append(token.decode("ascii"))
        return code


class TermCoder:
    """Texts -> (term code, text) of every term they hold; see the module
    docstring. The term codes are the caller's (``codes[term]`` gives a new
    term the next one), so they are the postings' own.

    Args:
        analyzer: how texts become terms.
        codes: term -> code, a mapping that codes a new term on first lookup.
        vocabulary: token -> id, shared with whoever else splits the same
            texts (the index's word codes); by default the coder's own.

    Example:
        >>> coder = TermCoder(Analyzer(), Codes())
        >>> terms, texts, lengths = coder.code(["Refunds are rounded", "the REFUND"])
        >>> sorted(zip(texts.tolist(), terms.tolist())), lengths.tolist()
        ([(0, 0), (0, 1), (1, 0)], [2, 1])
    """

    def __init__(self, analyzer: Analyzer, codes: Codes, vocabulary: Optional[Vocabulary] = None) -> None:
        self.analyzer = analyzer
        self.codes = codes
        self._key = cache_key(analyzer)
        self._stemming = bool(self._key[2])
        self._languages: Tuple[str, ...] = analyzer.languages
        self._default = self._languages.index(analyzer.default_language)
        self._ids: Vocabulary = _Ids() if vocabulary is None else vocabulary
        # The candidates with stopwords, each once (a repeated name can only
        # tie with its first place, which wins a tie), and per word a bit per
        # voter: set when that voter lists the word as a stopword.
        names = self._languages
        self._voters = [
            (n, STOPWORDS[name]) for n, name in enumerate(names) if name in STOPWORDS and names.index(name) == n
        ]
        self._votes = array.array("H")  # 16 bits: STOPWORDS has fewer languages
        self._grow_votes()
        # Per language name: word id -> the coder's own term id, -1 when the
        # word is no term there. A term gets the caller's code only when a
        # text holds it (``_Terms.coded``, -1 until then): the caller's codes are
        # the terms posted, not every stem of every word seen.
        self._terms: Dict[str, array.array[int]] = {}
        self._own = _Terms()

    def code(self, texts: Sequence[Optional[str]], ids: Any = None) -> Tuple[Any, Any, Any]:
        """``(terms, texts, lengths)``: int64 term codes with the batch
        position of the text holding each (a term held twice appears
        twice; their order is not the text's), and each text's number of
        terms (int32). None reads as an empty text.

        ``ids``: the vocabulary's ids of the tokens of ``texts`` when the
        caller has split them already (every text an ASCII string, split
        as `join_texts` says), so they are not split again."""
        import numpy as np

        self.analyzer._stem_ready()
        given: Sequence[str] = ["" if text is None else text for text in texts] if None in texts else texts  # type: ignore[assignment]
        if ids is None:
            joined = join_texts(given)
            if joined.isascii():  # a store's usual batch, checked on the joined text at once
                ids = self._split(joined)
        if ids is not None:
            terms, owners = self._code_ids(ids, len(given))
            return terms, owners, np.bincount(owners, minlength=len(given)).astype(np.int32)
        fast = [n for n, text in enumerate(given) if text.isascii()]
        terms, owners = self._code_ids(self._split(join_texts([given[n] for n in fast])), len(fast))
        slow = [n for n, text in enumerate(given) if not text.isascii()]
        analysed = [_cached_terms(self._key, given[n]) for n in slow]
        counts = np.fromiter(map(len, analysed), dtype=np.int64, count=len(slow))
        chained = itertools.chain.from_iterable(analysed)
        terms = np.concatenate([terms, np.fromiter(map(self.codes.__getitem__, chained), np.int64, int(counts.sum()))])
        holder = np.concatenate([np.asarray(fast, dtype=np.int64)[owners], np.repeat(np.asarray(slow), counts)])
        return terms, holder, np.bincount(holder, minlength=len(given)).astype(np.int32)

    def _split(self, joined: str) -> Any:
        """Step 1 and the lookup of step 2: the ids of an ASCII join's tokens."""
        import numpy as np

        tokens = byte_runs(joined)
        return np.fromiter(map(self._ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))

    def _code_ids(self, ids: Any, size: int) -> Tuple[Any, Any]:
        """Steps 2 to 4 for the token ids of ``size`` joined ASCII texts:
        term codes and, for each, the index of the text holding it."""
        import numpy as np

        if not size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self._grow_votes()
        owner = np.cumsum(ids == 0)  # a text's tokens come before its separator
        language = np.full(size, self._default, dtype=np.int64)
        if self._voters:
            language = self._vote(ids, owner, size, language)
        names = self._languages
        present = np.unique(language).tolist()
        if len(present) == 1:
            terms = np.frombuffer(self._table(names[present[0]]), dtype=np.int64)[ids]
        else:
            terms = np.empty(len(ids), dtype=np.int64)
            spoken = language[owner]
            for n in present:
                mine = spoken == n
                terms[mine] = np.frombuffer(self._table(names[n]), dtype=np.int64)[ids[mine]]
        kept = terms >= 0
        return self._caller_codes(terms[kept]), owner[kept]

    def _caller_codes(self, own: Any) -> Any:
        """The caller's codes of the coder's own term ids, coding (in id
        order) the terms no text held before."""
        import numpy as np

        terms = self._own
        coded = np.frombuffer(terms.coded, dtype=np.int64)[own]
        new = np.unique(own[coded < 0]).tolist()
        if not new:
            return coded
        for term in new:
            terms.coded[term] = self.codes[terms.names[term]]
        return np.frombuffer(terms.coded, dtype=np.int64)[own]

    def _grow_votes(self) -> None:
        """The stopword bits of each word new to the vocabulary (a lone
        letter is no word: never a vote)."""
        words, votes, voters = self._ids.words, self._votes, self._voters
        for word in words[len(votes) :]:
            votes.append(sum(1 << j for j, (_n, stop) in enumerate(voters) if word in stop) if len(word) > 1 else 0)

    def _vote(self, ids: Any, owner: Any, size: int, language: Any) -> Any:
        """Step 3: each text's language, ``language`` (the default) where no
        candidate's stopword occurs in it."""
        import numpy as np

        bits = np.frombuffer(self._votes, dtype=np.uint16)[ids]
        hit = np.flatnonzero(bits)
        if not len(hit):
            return language
        hit_bits, hit_owner = bits[hit], owner[hit]
        tally = np.stack(
            [np.bincount(hit_owner[(hit_bits >> j) & 1 == 1], minlength=size) for j in range(len(self._voters))]
        )
        # argmax takes the first of the most: the candidates' order decides a tie.
        best = np.asarray([n for n, _stop in self._voters], dtype=np.int64)[tally.argmax(axis=0)]
        return np.where(tally.max(axis=0) > 0, best, language)

    def _table(self, language: str) -> array.array[int]:
        """``language``'s word id -> own term id, extended to every word seen
        (the separator and a lone letter are no term)."""
        table = self._terms.setdefault(language, array.array("q"))
        words = self._ids.words
        if len(table) < len(words):
            decide, own = _terms_table(language, self._stemming), self._own
            fresh = []
            for word in words[len(table) :]:
                term = "" if word == SEPARATOR or (len(word) == 1 and not word.isdigit()) else decide[word]
                fresh.append(own[term] if term else -1)
            table.extend(fresh)
        return table
