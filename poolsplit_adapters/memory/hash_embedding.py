"""A deterministic embedding with real similarity, for tests and demos.

The frameworks' own test embeddings carry no meaning: LangChain's
``DeterministicFakeEmbedding`` hashes the whole text into a random vector and
LlamaIndex's ``MockEmbedding`` returns the same vector for every text, so a
test of *ranking by similarity* cannot be written with either. This one
needs no model and no network and still places related texts close:

* each **significant word** is one feature: the words of
  `poolsplit_adapters.relevance.words.words` (NFKC, casefolded,
  letters of any script, CJK runs as character bigrams), ASCII ones of 3+
  characters and not in the core's ``STOPWORDS``. On ASCII text these are
  exactly the core's significant words; until 0.4 only those counted, so a
  Chinese or Hebrew text had the zero vector (and a vector store's cosine
  with it was NaN);
* the **character n-grams of the word's start** (3- and 4-grams of ``"<"``
  plus its first six letters) are more features, weighted so that one word's
  n-grams together weigh as much as the word itself. They make "rounding"
  close to "rounded" and "refund" close to "refunds" (inflections share their
  start), while words that only share an ending ("running", "staging") stay
  apart: a crude stemmer without a language model.

Every feature is hashed (BLAKE2b, so the vector is the same in every process
and on every machine, unlike Python's salted ``hash``) to one of ``dim``
buckets with a sign, and the vector is L2-normalised. Texts that share no
word and no n-gram are orthogonal up to hash collisions.

It knows no synonyms: "reimbursement" is no closer to "refund" than to
"kitten". The labelled evaluation (``benchmarks/eval``) therefore uses it only
to check that the harness runs; the quality figures come from a real model.

Pure Python, standard library only (numpy is not needed): it returns lists
of floats, as both frameworks' embedding interfaces do.
"""

from __future__ import annotations

import functools
import hashlib
import math
from typing import List, Sequence, Tuple

from ..relevance.words import embedding_words

__all__ = ["HashEmbedder"]

#: Character n-gram sizes, taken from ``"<"`` plus the first ``STEM_LETTERS``
#: letters of a word. Grams of the whole word made unrelated words that share
#: a suffix ("-ing", "-tion") look related; on a list of 10 inflection pairs
#: and 10 suffix-sharing pairs, the start-only grams separated them best
#: (mean cosine 0.88 against 0.20, whole-word grams 0.65 against 0.39).
GRAM_SIZES = (3, 4)
STEM_LETTERS = 6
#: Weight of a word, and total weight of its n-grams (each n-gram gets
#: ``GRAM_WEIGHT / sqrt(count)``, so a long word does not outweigh a short one).
WORD_WEIGHT = 1.0
GRAM_WEIGHT = 1.0


#: The words that become features (see the module docstring): the one
#: tokenizer module's rule, `relevance.words.embedding_words`.
significant_words = embedding_words


@functools.lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dim: int) -> Tuple[int, float]:
    """(bucket, sign) of a feature: 8 bytes of BLAKE2b, the low bit the sign.
    Cached because n-grams repeat across texts far more than they vary."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return (digest >> 1) % dim, 1.0 if digest & 1 else -1.0


class HashEmbedder:
    """Hashed word and character n-gram embedding; the same text gives the
    same unit vector everywhere.

    Args:
        dim: vector length. Unrelated texts look similar only through hash
            collisions, whose noise on a cosine is about ``1/sqrt(dim)``; the
            default 1024 keeps it near 0.03 (at 384 a single collision of two
            words already showed as a cosine of 0.23).

    Example:
        >>> embedder = HashEmbedder(dim=64)
        >>> a, b, c = embedder.embed_documents(["refunds rounding", "refund rounded", "kitten photos"])
        >>> dot = lambda x, y: sum(p * q for p, q in zip(x, y))
        >>> dot(a, b) > dot(a, c)
        True
    """

    def __init__(self, dim: int = 1024) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError("HashEmbedder dim must be a positive int, got %r" % (dim,))
        self.dim = dim

    @property
    def model_id(self) -> str:
        """Names the vector space: vectors cached under one id are never
        reused by an embedder with another (a different ``dim`` or rule)."""
        return "poolsplit-hash-v2/dim=%d/grams=%s/stem=%d" % (
            self.dim,
            "-".join(map(str, GRAM_SIZES)),
            STEM_LETTERS,
        )

    def embed(self, text: str) -> List[float]:
        """The unit vector of ``text`` (all zeros when it has no significant
        word: there is nothing to compare)."""
        if not isinstance(text, str):
            raise TypeError("HashEmbedder embeds strings, got %s" % type(text).__name__)
        vector = [0.0] * self.dim
        # Sorted: a frozenset's order varies between processes, and float
        # addition in another order can change the last bit.
        for word in sorted(significant_words(text)):
            slot, sign = _bucket("w:" + word, self.dim)
            vector[slot] += sign * WORD_WEIGHT
            padded = "<" + word[:STEM_LETTERS]
            grams = [padded[k : k + n] for n in GRAM_SIZES for k in range(len(padded) - n + 1)]
            if not grams:  # a one-character word (a lone CJK character)
                continue
            weight = GRAM_WEIGHT / math.sqrt(len(grams))
            for gram in grams:
                slot, sign = _bucket("c:" + gram, self.dim)
                vector[slot] += sign * weight
        norm = math.sqrt(math.fsum(x * x for x in vector))
        return [x / norm for x in vector] if norm > 0.0 else vector

    def embed_documents(self, texts: Sequence[str]) -> List[List[float]]:
        """Vectors of several texts (LangChain's method name)."""
        return [self.embed(text) for text in texts]

    def embed_query(self, text: str) -> List[float]:
        """Vector of a query: the same space as documents (symmetric)."""
        return self.embed(text)
