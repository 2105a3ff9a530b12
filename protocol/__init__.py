"""The Iris wire protocol: msgspec Structs, framing and errors. Pure: no I/O, no trio."""

PROTOCOL_VERSION = 1
