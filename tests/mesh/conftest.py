"""The mesh on the real engine: ``nats-server`` processes with JetStream on free loopback
ports, their stores under the module's temporary folder, started once per test module.
Tests that kill a server start their own."""

from __future__ import annotations

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
