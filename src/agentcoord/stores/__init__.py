"""Durable state of the daemon: the Kubernetes-compatible object store (``objects``)."""
