"""Talking to the claude CLI: its stream-json lines, its command line, its process."""
