"""The small Kubernetes client and the watch-backed cache that both the webhook (Volcano's Queues)
and the controller (jobs and their children) use."""
