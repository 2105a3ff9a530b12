"""Iris command-line client and helpers."""
