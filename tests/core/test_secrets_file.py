"""The secrets file's format: what a line may be, and the line each refusal names (never
what it holds)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronduit.core.secrets_file import MAX_SECRETS_FILE, SecretsFileError, parse_secrets

SECRET = "hunter2-never-shown"


def test_names_values_comments_blank_lines_and_export_are_read() -> None:
    """Quotes around a value go, an ``=`` inside it stays, the last of a name wins."""
    data = (b"# deploy keys\n\nHOOK_KEY=abc\nexport GH_KEY = 'x=y' \n  API_KEY=\"q r\"\n"
            b"HOOK_KEY=later\nEMPTY=\n")
    assert {"HOOK_KEY": "later", "GH_KEY": "x=y", "API_KEY": "q r", "EMPTY": ""} == (
        parse_secrets(data))


def test_crlf_and_cr_line_ends_and_a_byte_order_mark_are_read_as_an_editor_shows_them(
) -> None:
    assert {"A": "1", "B": "2", "C": "3"} == parse_secrets(b"\xef\xbb\xbfA=1\r\nB=2\rC=3")


@pytest.mark.parametrize(("data", "line", "problem"), [
    pytest.param(b"A=1\nB=caf\xe9\n", 2, "not UTF-8 text", id="latin-1"),
    pytest.param(b"A=1\r\n\r\nB=" + SECRET.encode() + b"\x00\n", 3,
                 "holds a NUL character, which no environment variable can carry", id="nul"),
    pytest.param(b"A=1\n" + SECRET.encode() + b"\n", 2,
                 "not NAME=value: the line has no '='", id="no-equals"),
    pytest.param(b"# ok\nMY KEY=" + SECRET.encode() + b"\n", 2,
                 "the name before '=' must be letters, digits and _, not starting with a "
                 "digit", id="bad-name"),
    pytest.param(b"=" + SECRET.encode(), 1,
                 "the name before '=' must be letters, digits and _, not starting with a "
                 "digit", id="no-name"),
    pytest.param(b"1KEY=x", 1,
                 "the name before '=' must be letters, digits and _, not starting with a "
                 "digit", id="digit-first"),
])
def test_each_broken_line_is_named_by_its_number_and_never_quoted(
        data: bytes, line: int, problem: str) -> None:
    with pytest.raises(SecretsFileError) as refused:
        parse_secrets(data)
    assert (line, problem) == (refused.value.line, str(refused.value))
    assert SECRET not in str(refused.value)


def test_a_file_past_the_size_limit_is_refused_whole() -> None:
    with pytest.raises(SecretsFileError) as refused:
        parse_secrets(b"A=" + b"x" * MAX_SECRETS_FILE)
    assert (None, "larger than 1,048,576 bytes: not a secrets file") == (
        refused.value.line, str(refused.value))


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
values = st.text(st.characters(blacklist_categories=("Cs",),
                               blacklist_characters="\x00\r\n"), max_size=20).map(str.strip)


@given(st.dictionaries(names.filter(lambda name: not name.startswith("export")), values))
def test_any_secrets_written_one_a_line_read_back_the_same(secrets: dict[str, str]) -> None:
    """Quoted, so a value that starts and ends with a quote of its own survives too."""
    data = "".join(f"{name}='{value}'\n" for name, value in secrets.items()).encode()
    assert secrets == parse_secrets(data)


@given(st.binary(max_size=200))
def test_any_bytes_give_values_or_a_refusal_naming_a_line_of_the_file(data: bytes) -> None:
    """Never another exception; a line number is one the file has."""
    try:
        parse_secrets(data)
    except SecretsFileError as error:
        line = error.line
    else:
        return
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
    assert line is None or 1 <= line <= lines
