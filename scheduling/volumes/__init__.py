"""The volume binder: which claims a pod has, which PVs or provisioning serve them on a
node, and how that choice is assumed and reverted (kube-scheduler's volume binder)."""
