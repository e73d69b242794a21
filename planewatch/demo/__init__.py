"""`planewatch demo`: the plan (pure), its child processes, the alert watcher and the runner."""
