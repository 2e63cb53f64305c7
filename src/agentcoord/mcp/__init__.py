"""The MCP surface: the JSON-RPC core every transport shares and its listeners (unix socket and
HTTP)."""
