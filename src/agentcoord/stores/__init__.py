"""Durable and lease state: the object store, NATS KV (claims, focus) and the audit stream."""
