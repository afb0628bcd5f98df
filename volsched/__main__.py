"""``python -m volsched`` runs the same command line as the ``volsched`` script."""

from volsched.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
