"""Generated protobuf code for the agent.v1 wire format (see proto/)."""
