"""A scripted, deterministic stand-in for the Anthropic Messages API (stdlib only).

Used by ``iris demo``, the tests and the benchmarks; ``python -m scripted_model`` serves it.
Layering: imports nothing from Iris (not ``protocol``, ``irisd`` or ``iris_cli``).
"""

from scripted_model.model import ScriptedModel as ScriptedModel
from scripted_model.model import main as main
