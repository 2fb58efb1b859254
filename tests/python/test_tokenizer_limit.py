"""Tokenizer.encode's max_tokens: the ids up to the limit, UsageError as soon as they pass it."""

import time

import pytest

import hfstatic


def test_max_tokens_takes_the_ids_up_to_the_limit():
    tokenizer = hfstatic.Tokenizer()
    text = "In the beginning God created the heaven and the earth."
    ids = tokenizer.encode(text)
    assert len(ids) > 4
    assert tokenizer.encode(text, max_tokens=len(ids)) == ids
    assert tokenizer.encode(text, max_tokens=None) == ids
    assert tokenizer.encode(text, False, max_tokens=len(ids)) == tokenizer.encode(text, False)
    with pytest.raises(hfstatic.UsageError, match="^more than %d tokens$" % (len(ids) - 1)):
        tokenizer.encode(text, max_tokens=len(ids) - 1)
    with pytest.raises(hfstatic.UsageError, match="more than 0 tokens"):
        tokenizer.encode(text, max_tokens=0)


def test_max_tokens_stops_a_long_text_early():
    tokenizer = hfstatic.Tokenizer()
    text = "word " * ((4 << 20) // 5)
    start = time.monotonic()
    with pytest.raises(hfstatic.Error, match="more than 100 tokens"):
        tokenizer.encode(text, max_tokens=100)
    assert time.monotonic() - start < 5.0


def test_max_tokens_is_a_keyword_and_not_negative():
    tokenizer = hfstatic.Tokenizer()
    with pytest.raises(TypeError):
        tokenizer.encode("text", True, 3)
    with pytest.raises(TypeError):
        tokenizer.encode("text", max_tokens=-1)
