"""Durable and lease state: the Kubernetes-compatible object store (``objects``), NATS KV
(claims, focus), the audit stream, JetStream inboxes, and the record seams the store backs."""
