"""What the daemon tells its operators about itself: Prometheus metrics with
kube-scheduler's names, and OpenTelemetry spans for scheduling and binding cycles.

Any daemon package may record into these; they import nothing else of the daemon.
"""
