"""What a snapshot part may hold, checked before it is unpickled: only the pickle opcodes
``snapshot.encode`` writes, and no length or index larger than the part itself.

Python's unpickler believes what a pickle declares and allocates before it reads: a
40-byte part whose ``LONG_BINPUT`` named memo slot 200,000,000 made it grow its memo to
3 GiB, and ``BINBYTES8`` reserves whatever length it is given. Nothing volsched writes
needs those opcodes (protocol 5 memoizes with ``MEMOIZE``, one slot after the other), so
a part is walked first: each opcode must be one ``encode`` can write, and each counted
string, integer or frame must fit in what is left of the part. What the unpickler then
builds is bounded by the part's size.

The walk runs at C speed: a regular expression matches each run of opcodes whose
arguments have a fixed size or a one-byte length, and Python steps only over the few
opcodes with a longer length (strings of more than 255 bytes, frames).
"""

from __future__ import annotations

import re

# Opcodes with no argument: MEMOIZE, the tuple, dict, list and set builders, MARK,
# NEWOBJ, BUILD, NONE, NEWFALSE, NEWTRUE, STACK_GLOBAL and STOP — most frequent first
# (the engine tries them in this order).
_NO_ARGUMENT = b"\x94)(\x81btN}\x85\x89u\x86\x88\x87s\x91]ae\x8f\x90\x93."
# Opcodes with an argument of a fixed size: BINGET and BININT1 (1 byte), BININT2 (2),
# BININT and LONG_BINGET (4), BINFLOAT (8).
_FIXED = {b"h": 1, b"J": 4, b"K": 1, b"G": 8, b"j": 4, b"M": 2}
# Opcodes followed by a one-byte length and that many bytes: SHORT_BINUNICODE, LONG1.
_ONE_BYTE_LENGTH = b"\x8c\x8a"
# Opcodes followed by a longer length: BINUNICODE and LONG4 (4 bytes, signed for
# LONG4), BINUNICODE8 (8 bytes) and FRAME (8 bytes, the size of the frame that follows,
# whose opcodes are walked like the others).
_LONG_LENGTH = {0x58: 4, 0x8B: 4, 0x8D: 8}
_FRAME = 0x95
_PROTO = 0x80
_ANY = rb"[\s\S]"


def _run_pattern() -> re.Pattern[bytes]:
    counted = b"|".join(
        re.escape(bytes([length])) + (_ANY + b"{%d}" % length if length else b"")
        for length in range(256)
    )
    no_argument = [re.escape(bytes([op])) for op in _NO_ARGUMENT]
    fixed = [re.escape(op) + _ANY + b"{%d}" % size for op, size in _FIXED.items()]
    one_byte = [re.escape(bytes([op])) + b"(?:" + counted + b")" for op in _ONE_BYTE_LENGTH]
    # In order of how often each appears in a snapshot.
    alternatives = [no_argument[0], fixed[0], no_argument[1], one_byte[0]]
    alternatives += no_argument[2:] + fixed[1:] + one_byte[1:]
    # Possessive: the opcodes do not overlap, so nothing is ever given back, and the
    # engine keeps no backtracking state for a run of millions of opcodes.
    return re.compile(b"(?:" + b"|".join(alternatives) + b")*+")


_RUN = _run_pattern()
_WRITTEN = frozenset(_NO_ARGUMENT + b"".join(_FIXED) + _ONE_BYTE_LENGTH)


class OpcodeError(ValueError):
    """The part holds an opcode ``encode`` never writes, or a length it cannot hold."""


def check_part(body: bytes) -> None:
    """Raise ``OpcodeError`` unless ``body`` is a pickle ``encode`` could have written."""
    size = len(body)
    if size < 2 or body[0] != _PROTO:
        raise OpcodeError("it does not start as a pickle of this version")
    position = 2
    while True:
        position = _RUN.match(body, position).end()  # type: ignore[union-attr]
        if position >= size:
            break
        op = body[position]
        if op == _FRAME:
            length_size, skip = 8, False
        elif op in _LONG_LENGTH:
            length_size, skip = _LONG_LENGTH[op], True
        elif op in _WRITTEN:
            raise OpcodeError(f"it is cut off at byte {position}")
        else:
            raise OpcodeError(
                f"it holds opcode {op:#04x} at byte {position}, which volsched never writes"
            )
        start = position + 1 + length_size
        length = int.from_bytes(body[position + 1 : start], "little", signed=op == 0x8B)
        if start > size or length < 0 or start + length > size:
            raise OpcodeError(
                f"opcode {op:#04x} at byte {position} declares {length} bytes, "
                f"past the end of the part ({size} bytes)"
            )
        position = start + length if skip else start
    if body[-1:] != b".":
        raise OpcodeError("it does not end as a pickle does")
