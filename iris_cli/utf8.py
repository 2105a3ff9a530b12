"""Text the user gives must be UTF-8: where it is not, for an error message. Stdlib
only: the entry point checks every argument before anything else is imported."""

from __future__ import annotations

import os


def not_utf8(raw: bytes) -> str:
    """Empty if ``raw`` is valid UTF-8, else where it is not (for an error message)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte 0x{raw[exc.start]:02x} at position {exc.start} is not UTF-8"
    return ""


def bad_argument(args: list[str]) -> str:
    """An error message for the first argument that is not valid UTF-8, or ''.

    Python hands such bytes over as lone surrogates (surrogateescape); sending them
    would fail deep in the encoder."""
    for number, arg in enumerate(args, start=1):
        raw = os.fsencode(arg)
        if problem := not_utf8(raw):
            shown = raw.decode("utf-8", "backslashreplace")
            return (
                f"argument {number} ('{shown}') is not valid UTF-8: {problem}; pass text in UTF-8 "
                "(convert it with 'iconv -t UTF-8')"
            )
    return ""
