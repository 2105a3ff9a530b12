"""End to end: a real irisd (``harness.Iris``), the real pinned claude and the scripted
model standing in for the Anthropic API. The shared fixtures (``iris``, ``model``,
``claude_bin``) live in the root conftest because browser/ and ssh/ use them too."""
