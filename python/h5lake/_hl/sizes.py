"""Sizes in bytes as people write them: ``"4M"``, ``"8MB"``, ``"1.5GiB"``."""

from __future__ import annotations

import numbers
import re

_SIZE = re.compile(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text, *, zero=False):
    """Bytes in ``"4M"``, ``"8MB"``, ``"512k"``, ``"1.5GiB"`` or ``"65536"``
    (K, M, G, T are powers of 1024); ``zero``: ``"0"`` is taken too.
    Raises ValueError for anything else."""
    match = _SIZE.fullmatch(text.strip())
    size = int(float(match[1]) * _UNITS[match[2].lower()]) if match else -1
    if size > 0 or (zero and size == 0):
        return size
    raise ValueError(f"invalid size {text!r}: give a number of bytes, optionally with K, M or G "
                     "(e.g. 4M)")


def size_option(name, value, *, default):
    """The bytes an option given as an int, a size string or a bool means:
    True is ``default`` (None: the callee's own), False and 0 are off (0)."""
    if value is None or value is True:
        return default
    if value is False:
        return 0
    if isinstance(value, str):
        try:
            return parse_size(value, zero=True)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} is a size in bytes (an int or a string such as '4M'), "
                        f"not {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a size in bytes (0 turns it off), not {value}")
    return int(value)
