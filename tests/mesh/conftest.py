"""The mesh on the real engine: ``nats-server`` processes with JetStream on free loopback
ports, their stores under the module's temporary folder, started once per test module.
Tests that kill a server start their own."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

from mesh.nats import NatsCluster, NatsServer


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    cluster = NatsCluster(tmp_path_factory.mktemp("nats-cluster")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(autouse=True)
def collect_nats_leftovers() -> Iterator[None]:
    """nats-py leaves the socket and asyncio stream of a connection it gave up (refused,
    broken by a server that stopped, or closed with a request under way) to the garbage
    collector, in reference cycles: collected at each mesh test's end, quietly (not Iris's
    to close), their ResourceWarnings would otherwise fail whichever test of this worker
    runs when the collector does (once an ssh test, after a mesh module)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
