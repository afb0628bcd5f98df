"""Scheduling decisions, pure: no asyncio, no I/O.

A decision is a function of the cluster cache's current state (layer 1 plus assumed
changes): the daemon and ``volsched simulate`` run exactly this code.
"""
