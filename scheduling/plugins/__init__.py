"""One module per predicate / priority family, after kube-scheduler's in-tree plugins.

Each plugin is a small class with upstream's plugin ``name`` that implements only the
extension points it needs (see ``volsched.scheduling.framework.interfaces``); per-pod work is done
once in ``pre_filter`` / ``pre_score`` and kept in the cycle state, so the per-node
``filter`` and ``score`` calls stay dictionary look-ups.
"""
