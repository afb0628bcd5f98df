"""How the command line reads its flags: as kube-scheduler's flag parser (pflag) reads
them, and every mistake one line.

argparse answers a bad flag with its usage text and the error on a second line; here it
is the error alone, prefixed as every other refusal is, with exit status 2. Integers are
ASCII digits (``int`` also reads "٣", an Arabic-Indic three, which no Go flag takes),
and a boolean flag is ``--flag`` or ``--flag=true|false``, nothing else.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

INT64_MAX = 2**63 - 1


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (and its subcommands' parsers) whose errors are one line."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"volsched: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def ascii_integer(text: str) -> int:
    """An int64 written in ASCII digits, with an optional sign (an argparse ``type``)."""
    shown = text if len(text) <= 40 else text[:40] + "…"
    digits = text[1:] if text[:1] in "+-" and text[1:] else text
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"must be an integer in ASCII digits, not {shown!r}")
    significant = digits.lstrip("0") or "0"
    magnitude = int(significant) if len(significant) <= 19 else INT64_MAX + 2
    value = -magnitude if text.startswith("-") else magnitude
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"must be an int64, not {shown}")
    return value


def add_boolean_flag(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """``--flag`` (true) or ``--flag=true|false``; the value is read, strictly, where
    the flag's environment variable is read too (``overrides.parse_boolean``)."""
    parser.add_argument(flag, nargs="?", const="true", metavar="true|false", help=help)
