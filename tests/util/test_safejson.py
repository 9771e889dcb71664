"""safejson: JSON from untrusted places is refused before parsing when it could crash the parser."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from deepseek_review.util import safejson
from deepseek_review.util.safejson import JSONRefused


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def test_100000_nested_arrays_are_refused_naming_what_was_read():
    with pytest.raises(JSONRefused, match=r"^receipt is nested too deeply \(over 128 levels\)$"):
        safejson.loads(nested(100_000), what="receipt")


def test_100000_nested_objects_are_refused():
    data = '{"a":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(JSONRefused, match="nested too deeply"):
        safejson.loads(data, what="answer")


def test_nesting_exactly_at_the_limit_is_parsed():
    assert safejson.loads(nested(128), what="x") == json.loads(nested(128))


def test_nesting_one_over_the_limit_is_refused():
    with pytest.raises(JSONRefused):
        safejson.loads(nested(129), what="x")


def test_many_flat_arrays_are_not_mistaken_for_depth():
    data = "[" + ",".join(["[]"] * 5000) + "]"
    assert len(safejson.loads(data, what="x")) == 5000


def test_brackets_inside_strings_do_not_count():
    text = "[" * 1000 + '\\"{' * 1000
    assert safejson.loads(json.dumps({"text": text}), what="x") == {"text": text}


def test_an_escaped_quote_does_not_end_a_string_for_the_depth_check():
    hidden = '"\\"' + "[" * 500 + '"'  # one string: the depth is 1
    assert safejson.loads(f"[{hidden}]", what="x") == ['"' + "[" * 500]
    with pytest.raises(JSONRefused):
        safejson.loads('["\\\\",' + nested(500) + "]", what="x")  # the string ends at \\"


def test_data_over_max_bytes_is_refused_before_parsing():
    with pytest.raises(JSONRefused, match=r"^record is too big \(101 bytes; the limit is 100\)$"):
        safejson.loads(b" " * 100 + b"1", what="record", max_bytes=100)


def test_a_number_of_thousands_of_digits_is_refused_not_a_python_setting_message():
    with pytest.raises(JSONRefused, match=r"^answer holds a number of thousands of digits$"):
        safejson.loads('{"n": ' + "9" * 5000 + "}", what="answer")


def test_malformed_json_raises_the_decoders_own_error():
    with pytest.raises(json.JSONDecodeError):
        safejson.loads(b"{not json", what="x")


def test_bytes_that_are_not_utf8_raise_unicode_decode_error():
    with pytest.raises(UnicodeDecodeError):
        safejson.loads(b'"\xff"', what="x")


def test_a_given_decoder_is_used():
    decoder = json.JSONDecoder(object_pairs_hook=lambda pairs: pairs)
    assert safejson.loads(b'{"a": 1}', what="x", decoder=decoder) == [("a", 1)]


def test_str_and_bytes_give_the_same_value():
    doc = '{"k": ["v", 1, 2.5, null, true]}'
    assert safejson.loads(doc, what="x") == safejson.loads(doc.encode(), what="x")


def test_a_refusal_is_a_value_error_so_bad_json_handlers_catch_it():
    assert issubclass(JSONRefused, ValueError)


# --------------------------------------------------------------------------- files


def test_a_file_over_the_limit_is_refused_by_its_size_before_reading(tmp_path):
    big = tmp_path / "big.receipt.json"
    with big.open("wb") as fh:
        fh.truncate(1 << 30)  # a hole: a gigabyte that costs no disk
    with pytest.raises(OSError) as info:
        safejson.read_file(big, max_bytes=1000)
    assert info.value.errno == errno.EFBIG
    assert info.value.strerror == "1073741824 bytes or more, over the 1000 a review file may hold"


def test_a_file_at_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"x" * 1000)
    assert safejson.read_file(path, max_bytes=1000) == b"x" * 1000


def test_a_stream_is_read_no_further_than_the_limit():
    with pytest.raises(OSError) as info:
        safejson.read_stream("/dev/zero", max_bytes=1000)  # endless: stopped at 1001 bytes
    assert info.value.errno == errno.EFBIG


def test_what_is_not_a_regular_file_is_refused_unread(tmp_path):
    fifo = tmp_path / "planted.receipt.json"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(OSError):
            safejson.read_file(path)
