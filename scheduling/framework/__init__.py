"""The extension points and the cycle runner, after kube-scheduler's framework."""
