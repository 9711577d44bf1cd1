"""The one BM25 term: the column path's array form gives the scalar form's bits."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters.relevance.bm25 import K1, B, idf, length_norm, term

_COUNTS = st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20)


@given(
    counts=_COUNTS,
    lengths=st.lists(st.integers(min_value=1, max_value=500), min_size=20, max_size=20),
    documents=st.integers(min_value=1, max_value=1000),
    frequency=st.integers(min_value=0, max_value=1000),
    average=st.floats(min_value=0.5, max_value=300.0),
)
def test_array_form_is_the_scalar_form_bit_for_bit(
    counts: list[int], lengths: list[int], documents: int, frequency: int, average: float
) -> None:
    weight = idf(documents, min(frequency, documents))
    lengths = lengths[: len(counts)]
    norms = length_norm(np.asarray(lengths, dtype=np.float64), average)
    shares = term(weight, np.asarray(counts, dtype=np.float64), norms)
    for n, (count, length) in enumerate(zip(counts, lengths)):
        norm = length_norm(length, average)
        assert norms[n] == norm
        assert shares[n] == term(weight, count, norm)


def test_the_formula() -> None:
    assert length_norm(10, 5.0) == K1 * (1.0 - B + B * 10 / 5.0)
    assert term(2.0, 3, 1.5) == 2.0 * 3 * (K1 + 1.0) / (3 + 1.5)
