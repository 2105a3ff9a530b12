"""Trio subsystems in process: the daemon's services with fake children on trio's
autojump clock (exact virtual times), real Unix sockets under temporary folders, and
small Python subprocesses. No real claude here: that is e2e/."""
