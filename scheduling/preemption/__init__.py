"""Priority preemption (kube-scheduler's DefaultPreemption PostFilter), pure.

When no node fits a pod, this package answers: which lower-priority pods, evicted from
which node, would let it fit — with every filter re-run, volumes included — or why no
eviction can help.
"""
