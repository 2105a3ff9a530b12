"""Pure machines and small units: plain values in, plain values out; no processes, no
sockets, no clock but the ``now=`` a test passes."""
