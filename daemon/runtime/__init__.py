"""The assembled daemon: leader election, the scheduling loop, start-up and shutdown
order, systemd notification.

This is the only package that knows every other part: it builds them, wires them
together and owns their lifecycles. Nothing below imports it.
"""
