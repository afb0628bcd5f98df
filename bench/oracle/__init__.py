"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
for tests, benchmarks and for recording what the real kube-scheduler decides.

The binaries come from the directory named by ``VOLSCHED_KUBE_ASSETS`` (as controller-runtime's
envtest takes them from ``KUBEBUILDER_ASSETS``); nothing here downloads or builds them. See
``docs/guides/oracle.md``.
"""

from bench.oracle.controlplane import ASSETS_ENV, ControlPlane, assets_dir

__all__ = ["ASSETS_ENV", "ControlPlane", "assets_dir"]
