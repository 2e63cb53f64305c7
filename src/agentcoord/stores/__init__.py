"""Durable state adapters: JetStream inboxes, and the record seams the object store backs."""
