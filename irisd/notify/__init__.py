"""Telling a person who is not looking: pending approvals, pending questions and health
findings of severity warning or worse go out as notices (``gate.py``: which, and how
often, pure; ``webhook.py``: settings.notify.webhook; ``service.py``: the trio side)."""
