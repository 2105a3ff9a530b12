"""A tell: one message to a team, its lifecycle and the answer."""
