"""iris-agent: the assistant irisd runs to answer questions about Iris itself."""
