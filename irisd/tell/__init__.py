"""A tell: one message to a team, its lifecycle and the answer.

``service`` is the one door to a live tell (submit, reply, get, cancel; ``persist`` for a
notification); ``admission`` decides, purely, whether one may be queued; ``active`` is a
tell in flight and the one place it ends; ``machine`` its pure state machine. The pool
(``irisd.pool``) runs tells; this package sees it only through ``service.Pool``."""
