"""Every API write of a decision, and nothing else writes.

The binder turns a decision into writes (PV claimRefs, claim annotations, replicas, the
pod's binding) behind a journal entry, and undoes them on failure; recovery finishes or
rolls back what a killed daemon left open; preemption's evictions, the replica reconciler
and the events and conditions users read in ``kubectl describe`` are written here too.
It reads the cache and the watch package's views, and writes through ``kube/``.
"""
