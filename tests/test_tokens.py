"""tiktoken counting: offline, cached, never 0."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from poolsplit_adapters.tokens import TiktokenCounter, TokenizerUnavailable, load_encoding


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
    import socket
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from poolsplit_adapters.tokens import TiktokenCounter, TokenizerUnavailable
    try:
        counter = TiktokenCounter({encoding!r})
        print("count", counter("offline tokenizer works"))
    except TokenizerUnavailable as exc:
        print("unavailable", exc)
    """
)


def _run_offline(encoding, env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-c", OFFLINE.format(encoding=encoding)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_loads_offline_from_bundled_copy_with_network_blocked(tmp_path):
    # An empty tiktoken cache: only the bundled copy can serve, and any
    # connection attempt fails the test.
    out = _run_offline("o200k_base", {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    expected = len(load_encoding("o200k_base").encode_ordinary("offline tokenizer works"))
    assert out.stdout.strip() == "count %d" % expected
    assert os.environ.get("TIKTOKEN_CACHE_DIR") != str(tmp_path)


def test_missing_file_names_the_fix_instead_of_downloading(tmp_path):
    # p50k_base is not bundled anywhere: the error must say how to fix it.
    out = _run_offline("p50k_base", {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("unavailable no local copy of the 'p50k_base' tokenizer file")
    assert "POOLSPLIT_TIKTOKEN_DIR" in out.stdout
