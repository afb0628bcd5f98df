"""``kubectl volsched``: volsched's read-only commands as a kubectl plugin.

kubectl runs any ``kubectl-volsched`` on the PATH for ``kubectl volsched …`` and hands it
every argument after the plugin's name, its own global flags included, wherever the user
put them (``kubectl volsched --context prod explain web -n shop``). This entry point
takes kubectl's flags for choosing a cluster (``--kubeconfig``, ``--context``,
``-n/--namespace``) and its ``--request-timeout``, in any of kubectl's spellings, from
wherever they stand, and runs the volsched command with them; the kubeconfig is then
found as kubectl finds it (``$KUBECONFIG`` and its merging, the current context, the
context's namespace: see ``kubeconfig_merging``).

Only the commands that read a cluster and never write to it are offered: ``snapshot``,
``simulate`` and ``explain``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from volsched.daemon.cli.main import main as volsched_main

COMMANDS = ("snapshot", "simulate", "explain")

USAGE = """\
usage: kubectl volsched COMMAND [kubectl flags] [options]

Ask volsched, read-only, where the pods of the current cluster would go.

commands:
  explain [NAMESPACE/]POD   why a pod goes where it goes or stays pending, node by node
  simulate                  decide every pending pod and print where it goes
  snapshot [-o FILE]        write the objects simulate reads, without secrets

kubectl flags:
  --kubeconfig FILE         kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
  --context NAME            kubeconfig context (default: the current context)
  -n, --namespace NS        namespace of a pod named without one (default: the context's)
  --request-timeout 30s     give up on a request not answered whole within this

Run `kubectl volsched COMMAND --help` for a command's options.
"""


class UsageError(Exception):
    """The arguments name no command this plugin offers."""


def _kubectl_flags() -> argparse.ArgumentParser:
    flags = argparse.ArgumentParser(prog="kubectl volsched", add_help=False, allow_abbrev=False)
    flags.add_argument("--kubeconfig")
    flags.add_argument("--context")
    flags.add_argument("-n", "--namespace")
    flags.add_argument("--request-timeout")
    return flags


def volsched_argv(argv: Sequence[str]) -> list[str]:
    """volsched's arguments for a plugin call: the command first, kubectl's flags
    (taken from before or after it) after it, everything else as given."""
    known, rest = _kubectl_flags().parse_known_args(list(argv))
    if not rest:
        raise UsageError(f"no command: use one of {', '.join(COMMANDS)}")
    if rest[0] not in COMMANDS:
        raise UsageError(f"unknown command {rest[0]!r}: use one of {', '.join(COMMANDS)}")
    command, *options = rest
    for flag, value in (
        ("--kubeconfig", known.kubeconfig),
        ("--context", known.context),
        ("--namespace", known.namespace),
        ("--request-timeout", known.request_timeout),
    ):
        if value is not None:
            options += [flag, value]
    return [command, *options]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    try:
        translated = volsched_argv(args)
    except UsageError as exc:
        print(f"kubectl volsched: {exc}", file=sys.stderr)
        return 2
    return volsched_main(translated)


if __name__ == "__main__":
    sys.exit(main())
