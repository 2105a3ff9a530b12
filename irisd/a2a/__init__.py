"""A2A 1.0 agents as Iris teams (outbound): ``teams.NAME: {a2a: URL}``; and, in ``inbound``,
every Iris team as an A2A agent (served on the HTTP face, irisd/http/a2a.py).

``card`` checks an agent's card and ``task`` follows one A2A task to the tell's states
(both pure); ``client`` speaks JSON-RPC over HTTP (httpx2 on trio); ``executor`` runs a
tell of such a team as a ``RemoteExecutor`` (irisd/pool/remote.py); ``teams`` keeps the
executors in step with config.yaml. None of the outbound modules is imported until a team
has ``a2a``.
"""
