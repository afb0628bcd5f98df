"""kube-scheduler's HTTP extender protocol, both ways: the wire shapes volsched answers
with when it serves as an extender, and the client that calls the extenders a
KubeSchedulerConfiguration lists (filter, prioritize, preempt, bind).

The client only talks HTTP and records its metrics; what an answer means for a decision
is decided in ``scheduling/`` (``extender_results``) and carried out by ``runtime/`` and
``binding/``, which import this package.
"""
