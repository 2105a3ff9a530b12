"""irisd: the long-lived trio daemon that owns every claude process."""

__version__ = "0.1.0"
