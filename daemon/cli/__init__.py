"""The command line: ``volsched run | demo | simulate | explain | migrate | webhook``,
the demo's embedded cluster, and the reports printed for people and programs.

The top of the house: it builds settings, starts the runtime or runs a decision offline,
and turns every error a user can cause into one line. Nothing imports it.
"""
