"""The pool: one actor per (from_team, to_team) pair, each owning at most one claude child."""
