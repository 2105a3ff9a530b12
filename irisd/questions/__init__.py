"""Pending questions: answers that asked their caller something while nobody waited."""
