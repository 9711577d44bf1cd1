"""tiktoken counting: offline, cached, never 0."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

from poolsplit_adapters.tokens import (
    BUNDLED_DIR,
    TiktokenCounter,
    TokenizerCounter,
    TokenizerUnavailable,
    _constructor_constants,
    load_encoding,
)


def test_counts_match_tiktoken_and_never_zero():
    counter = TiktokenCounter()
    enc = load_encoding("o200k_base")
    assert counter("") == 1
    text = "Never force-push to main; open a pull request instead."
    assert counter(text) == len(enc.encode_ordinary(text)) > 1
    # Special-token text is counted as data, not refused.
    assert counter("<|endoftext|>") == len(enc.encode_ordinary("<|endoftext|>"))


def test_cache_means_one_tokenisation_per_distinct_text():
    counter = TiktokenCounter("cl100k_base")
    texts = ["alpha beta", "gamma", "alpha beta", ""]
    first = counter.count_many(texts)
    assert counter.tokenized == 3
    assert counter.count_many(texts) == first
    assert [counter(t) for t in texts] == first
    assert counter.tokenized == 3


def _texts(count):
    # Distinct, varied texts with repeats and special-token text among them.
    words = ["deploy", "staging", "naïve", "数据库", "<|endoftext|>", "retry", "", "  "]
    distinct = [" ".join(words[(i + k) % len(words)] for k in range(i % 9)) + str(i) for i in range(1500)]
    return [distinct[i * 7 % 1500] for i in range(count)]


def test_count_many_counts_each_distinct_text_once_in_order():
    enc = load_encoding("o200k_base")
    texts = _texts(5000)
    counter = TiktokenCounter()
    assert counter.count_many(texts) == [max(1, len(enc.encode_ordinary(t))) for t in texts]
    assert counter.tokenized == len(set(texts)) == 1500
    assert counter.count_many(texts[:10]) == counter.count_many(texts)[:10]
    assert counter.tokenized == 1500  # all cached


def test_a_batch_larger_than_the_cache_still_counts_every_text():
    counter = TokenizerCounter(str.split, cache_size=10)
    texts = ["word " * n for n in range(50)]
    assert counter.count_many(texts) == [max(1, n) for n in range(50)]
    assert counter.tokenized == 50
    assert counter("word word") == 2 and counter("") == 1  # never 0


def test_llama_index_counter_batches_and_counts_like_its_tokenizer():
    from llama_index.core.utils import get_tokenizer

    from poolsplit_adapters.tokens import counter_from, llama_index_counter

    tokenizer = get_tokenizer()
    counter = llama_index_counter()
    assert counter is llama_index_counter()  # one shared default
    assert counter.counter is counter_from(tokenizer)  # one cache per tokenizer
    texts = _texts(2500)
    # allowed_special="all": "<|endoftext|>" is one token there, as Memory counts it.
    assert counter.count_many(texts) == [max(1, len(tokenizer(t))) for t in texts]
    assert counter("<|endoftext|>") == 1


def test_model_name_selects_its_encoding():
    assert TiktokenCounter(model="gpt-4o").encoding_name == "o200k_base"
    assert TiktokenCounter(model="gpt-4").encoding_name == "cl100k_base"
    with pytest.raises(TokenizerUnavailable, match="does not know the model"):
        TiktokenCounter(model="no-such-model-xyz")


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(TokenizerUnavailable, match="unknown tiktoken encoding 'nope'"):
        load_encoding("nope")


OFFLINE = textwrap.dedent(
    """
    import socket, sys
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    if {hide_llama_index!r}:
        # As after `pip install ".[langchain]"`: llama-index-core cannot be imported.
        sys.modules["llama_index"] = None
    from poolsplit_adapters.tokens import TiktokenCounter, TokenizerUnavailable, encoding_source
    try:
        counter = TiktokenCounter({encoding!r})
        print("count", counter("offline tokenizer works"))
        print("source", encoding_source({encoding!r}))
    except TokenizerUnavailable as exc:
        print("unavailable", exc)
    """
)


def _run_offline(encoding, env_extra, hide_llama_index=False):
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.pop("POOLSPLIT_TIKTOKEN_DIR", None)
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-c", OFFLINE.format(encoding=encoding, hide_llama_index=hide_llama_index)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_package_data_copy_serves_without_network_or_llama_index(tmp_path, encoding):
    # The langchain extra alone: no llama-index-core, an empty tiktoken
    # cache, every connection attempt fails the run.
    out = _run_offline(encoding, {"TIKTOKEN_CACHE_DIR": str(tmp_path)}, hide_llama_index=True)
    assert out.returncode == 0, out.stderr
    expected = len(load_encoding(encoding).encode_ordinary("offline tokenizer works"))
    assert out.stdout.splitlines() == ["count %d" % expected, "source %s" % BUNDLED_DIR]
    assert list(tmp_path.iterdir()) == []  # nothing was cached (nor downloaded) on the way


def test_bundled_files_are_the_ones_tiktoken_expects():
    # Same names and digests as tiktoken's own constructors: a stale or
    # damaged copy fails here, not on a user's machine.
    for encoding in ("o200k_base", "cl100k_base"):
        urls, digests = _constructor_constants(encoding)
        [name] = [hashlib.sha1(u.encode()).hexdigest() for u in urls]
        assert hashlib.sha256((BUNDLED_DIR / name).read_bytes()).hexdigest() in digests
    assert sorted(p.name for p in BUNDLED_DIR.iterdir() if p.suffix != ".md") == sorted(
        hashlib.sha1(u.encode()).hexdigest()
        for e in ("o200k_base", "cl100k_base")
        for u in _constructor_constants(e)[0]
    )


def test_explicit_folder_wins_and_a_damaged_copy_is_skipped(tmp_path):
    urls, _ = _constructor_constants("o200k_base")
    name = hashlib.sha1(urls[0].encode()).hexdigest()
    good = tmp_path / "good"
    good.mkdir()
    (good / name).write_bytes((BUNDLED_DIR / name).read_bytes())
    out = _run_offline("o200k_base", {"POOLSPLIT_TIKTOKEN_DIR": str(good)}, hide_llama_index=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == "source %s" % good
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / name).write_bytes(b"not a tokenizer file")
    out = _run_offline("o200k_base", {"POOLSPLIT_TIKTOKEN_DIR": str(bad)}, hide_llama_index=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1] == "source %s" % BUNDLED_DIR
    assert (bad / name).read_bytes() == b"not a tokenizer file"  # tiktoken never saw it, so never deleted it


def test_missing_file_names_the_fix_instead_of_downloading(tmp_path):
    # p50k_base is not bundled anywhere: the error must say how to fix it.
    out = _run_offline("p50k_base", {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("unavailable no local copy of the 'p50k_base' tokenizer file")
    assert "POOLSPLIT_TIKTOKEN_DIR" in out.stdout


def test_a_tiktoken_counter_loads_its_encoding_on_the_first_count_and_counts_the_same(monkeypatch):
    from poolsplit_adapters import tokens

    loads = []
    monkeypatch.setattr(tokens, "load_encoding", lambda name="o200k_base": loads.append(name) or load_encoding(name))
    counter = TiktokenCounter("cl100k_base")
    assert loads == []  # constructed: the file is checked, not loaded
    text = "Never force-push to main; open a pull request instead."
    assert counter(text) == len(load_encoding("cl100k_base").encode_ordinary(text))
    assert counter.count_many(["a b", text, "<|endoftext|>"]) == [
        len(load_encoding("cl100k_base").encode_ordinary(t)) for t in ["a b", text, "<|endoftext|>"]
    ]
    assert loads == ["cl100k_base"]  # once: later counts call the encoding directly
    assert counter.encoding is load_encoding("cl100k_base")


def test_a_bad_encoding_still_fails_at_construction():
    with pytest.raises(TokenizerUnavailable, match="unknown tiktoken encoding 'nope'"):
        TiktokenCounter("nope")


def test_a_tokenizer_that_returns_no_tokens_or_is_none_is_named():
    # Found by an adversarial run: "object of type 'NoneType' has no len()" on
    # the first count, and "'int' object is not callable", naming neither.
    from poolsplit_adapters import Pool
    from poolsplit_adapters.errors import ArgumentError
    from poolsplit_adapters.llama_index import poolsplit_memory_blocks

    def nothing(text: str) -> None:
        return None

    with pytest.raises(ArgumentError, match=r"^the tokenizer <function .*nothing.*> must return the text's tokens "):
        poolsplit_memory_blocks([{"content": "Never force-push."}], [Pool("all", 100, 5)], tokenizer_fn=nothing)
    with pytest.raises(ArgumentError, match=r"^tokenizer_fn must be callable \(text -> its tokens\), got int 42$"):
        poolsplit_memory_blocks([], [Pool("all", 100, 5)], tokenizer_fn=42)
