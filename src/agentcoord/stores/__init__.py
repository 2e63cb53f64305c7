"""Durable and lease state: the object store, NATS KV (claims, focus), the audit stream,
JetStream inboxes, and the record seams the object store backs."""
