"""``volsched shadow-report``: shadow mode's comparison, read from a running shadow's
``/shadow/report`` (or a saved copy of it) and printed as a table.

    volsched shadow-report --url https://volsched-shadow:10351/shadow/report \\
        [--token-file FILE] [--ca-file PEM | --insecure-skip-tls-verify] [-o table|json]
    volsched shadow-report --file report.json

Anything that keeps the report from being read — a refused connection, a 401/403, a file
that is not a report — is one line naming the URL or file, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import (
    MAX_FILE_BYTES,
    FileLimitError,
    read_bounded,
    read_text_bounded,
    shown_size,
)
from volsched.cache.json_limits import JsonLimitError, loads_bounded

# The whole read of a report, connection to last byte.
TIMEOUT_SECONDS = 10.0
TOKEN_FILE_BYTES = 64 * 1024
# The order a reader wants: agreement first, then each kind of difference.
OUTCOME_LABELS = {
    "agreed": "same node",
    "tied": "another node, scored as high",
    "lower_score": "a node volsched scores lower",
    "rejected": "a node volsched rejects",
    "unschedulable": "bound, though volsched places it nowhere",
    "unknown_node": "a node volsched does not know",
    "error": "volsched could not decide",
}


def _fetch(url: str, token_file: str | None, ca_file: str | None, insecure: bool) -> bytes:
    # Imported here: ``volsched run`` imports this module with the parser, and should
    # not pay for an HTTP client it never uses.
    import ssl
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json"}
    if token_file:
        try:
            token = read_text_bounded(token_file, TOKEN_FILE_BYTES).strip()
        except FileLimitError as exc:
            raise ConfigError(f"--token-file {token_file}: {exc}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"--token-file {token_file}: not UTF-8 text") from None
        except OSError as exc:
            raise ConfigError(f"--token-file {token_file}: cannot read: {exc.strerror}") from None
        headers["Authorization"] = f"Bearer {token}"
    context: ssl.SSLContext | None = None
    if url.startswith("https:"):
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"--ca-file {ca_file}: cannot use: {exc}") from None
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS, context=context) as answer:
            return _read_within(answer, url)
    except urllib.error.HTTPError as exc:
        detail = exc.read(4096).decode("utf-8", "replace").strip()[:200]
        raise ConfigError(f"{url}: HTTP {exc.code}: {detail or exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"{url}: cannot read the report: {reason}") from None


def _read_within(answer: Any, url: str) -> bytes:
    """The body, refused past ``MAX_FILE_BYTES`` or ``TIMEOUT_SECONDS`` in all: the
    socket's timeout only bounds each wait, and a server sending a byte a second never
    trips it. ``read1`` returns after one receive, so the deadline is checked often."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk: bytes = answer.read1(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise ConfigError(f"{url}: the report is larger than {shown_size(MAX_FILE_BYTES)}")
        if time.monotonic() > deadline:
            raise ConfigError(f"{url}: the report took more than {TIMEOUT_SECONDS:g}s to read")


def parse_report(data: bytes, source: str) -> dict[str, Any]:
    """The report's JSON, checked for the parts the table shows."""
    try:
        report = loads_bounded(data)
    except JsonLimitError as exc:
        raise ConfigError(f"{source}: not a shadow report ({exc})") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{source}: not a shadow report (not JSON)") from None
    if not isinstance(report, dict):
        raise ConfigError(f"{source}: not a shadow report (not a JSON object)")
    for key, kind in (("outcomes", dict), ("rejectionReasons", dict), ("differences", list)):
        if not isinstance(report.get(key), kind):
            raise ConfigError(f"{source}: not a shadow report ({key} is missing or malformed)")
    counts = report["outcomes"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
        raise ConfigError(f"{source}: not a shadow report (outcomes must be counts)")
    return report


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def report_table(report: Mapping[str, Any]) -> str:
    counts: Mapping[str, int] = report["outcomes"]
    compared = sum(counts.values())
    names = ", ".join(str(n) for n in report.get("schedulerNames") or []) or "?"
    lines = [f"Pods bound by {names}, compared with volsched's decision: {compared}"]
    rows = [["OUTCOME", "PODS", "SHARE", "THE OTHER SCHEDULER CHOSE"]]
    for outcome, label in OUTCOME_LABELS.items():
        count = int(counts.get(outcome, 0))
        share = f"{100 * count / compared:.1f}%" if compared else "-"
        rows.append([outcome, str(count), share, label])
    lines += _table(rows)
    ratio = report.get("agreementRatio")
    if isinstance(ratio, int | float):
        lines.append(f"Agreement (same node or tied): {100 * ratio:.1f}%")
    gap = report.get("scoreGap") or {}
    if isinstance(gap, Mapping) and gap.get("median") is not None:
        lines.append(f"Score gap on lower-scored nodes: median {gap['median']}, max {gap['max']}")
    causes = report.get("causes") or {}
    if isinstance(causes, Mapping) and any(c not in ("none", "tie-break") for c in causes):
        lines += [
            "",
            *_table(
                [["PODS", "CAUSE OF THE DIFFERENCE"]]
                + [[str(n), str(c)] for c, n in causes.items() if c not in ("none", "tie-break")]
            ),
        ]
    storage = report.get("storage") or {}
    if isinstance(storage, Mapping):
        lines += _storage_lines(storage)
    reasons: Mapping[str, int] = report["rejectionReasons"]
    if reasons:
        lines += [
            "",
            *_table(
                [["PODS", "WHY VOLSCHED REJECTS THE OTHER SCHEDULER'S NODE"]]
                + [[str(n), r] for r, n in reasons.items()]
            ),
        ]
    pending = report.get("pending") or {}
    if isinstance(pending, Mapping) and pending:
        lines += [
            "",
            f"Still pending: {pending.get('placeable', 0)} volsched would place, "
            f"{pending.get('unschedulable', 0)} it finds unschedulable",
        ]
    differences = report["differences"]
    if differences:
        rows = [["POD", "THEIR NODE", "OUR NODE", "OUTCOME", "CAUSE", "GAP", "REASONS / PLUGINS"]]
        for item in differences:
            if not isinstance(item, Mapping):
                continue
            gap_value = item.get("scoreGap")
            rows.append([
                str(item.get("pod", "")),
                str(item.get("theirNode", "")),
                str(item.get("ourNode") or "-"),
                str(item.get("outcome", "")),
                str(item.get("cause", "-")),
                "-" if gap_value is None else str(gap_value),
                "; ".join(map(str, item.get("reasons") or item.get("differingPlugins") or []))
                or "-",
            ])  # fmt: skip
        lines += ["", f"Latest differences ({len(rows) - 1}):", *_table(rows)]
    return "\n".join(lines) + "\n"


def cmd_shadow_report(args: argparse.Namespace) -> int:
    if args.file:
        try:
            data = read_bounded(args.file)
        except FileLimitError as exc:
            raise ConfigError(f"{args.file}: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{args.file}: cannot read: {exc.strerror or exc}") from None
        report = parse_report(data, args.file)
    else:
        data = _fetch(args.url, args.token_file, args.ca_file, args.insecure_skip_tls_verify)
        report = parse_report(data, args.url)
    if args.output == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report_table(report))
    return 0


def add_shadow_report_command(commands: Any) -> None:
    """Register ``volsched shadow-report`` on the parser's subcommands."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "shadow-report",
        help="print how a shadow's decisions compare with the scheduler it shadows",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--url", help="a running shadow's /shadow/report")
    source.add_argument("--file", metavar="FILE", help="a saved /shadow/report (JSON)")
    parser.add_argument("--token-file", metavar="FILE", help="bearer token for --url")
    parser.add_argument("--ca-file", metavar="PEM", help="CA that signed the shadow's certificate")
    parser.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not verify the certificate"
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.set_defaults(handler=cmd_shadow_report)


def _storage_lines(storage: Mapping[str, Any]) -> list[str]:
    """What storage awareness would have saved, for the parts with anything to say."""
    lines = []
    gib = 2**30
    if storage.get("claimPods"):
        lines.append(
            f"Capacity stranded beyond the claims' requests ({storage['claimPods']} claim pods): "
            f"theirs {storage['theirStrandedBytes'] / gib:.1f} GiB, "
            f"volsched's {storage['ourStrandedBytes'] / gib:.1f} GiB, "
            f"saved {storage['savedBytes'] / gib:.1f} GiB"
        )
    if storage.get("replicatedPods"):
        lines.append(
            f"Replicated volumes without a replica on the pod's node "
            f"({storage['replicatedPods']} pods): theirs {storage['theirVolumesOffNode']}, "
            f"volsched's {storage['ourVolumesOffNode']}"
        )
    if storage.get("pendingForVolumes"):
        lines.append(
            f"Claim pods pending for want of a PV: {storage['pendingForVolumes']}, "
            f"of which volsched's placements would have served "
            f"{storage['pendingServedByVolsched']}"
        )
    return ["", *lines] if lines else []
