"""The scheduling queue: active, backoff and unschedulable pods, and the cluster
events that move rejected pods back.

The ingest feeds it (pod adds, updates, deletes, cluster events), the scheduling loop
takes from it, and the binder sends failed pods back to it. It neither waits on the
network nor writes anything.
"""
