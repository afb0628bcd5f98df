"""The crash suite: the daemon killed with SIGKILL just before and just after the API
writes of its binding cycle and of its recovery, restarted, and checked at convergence."""
