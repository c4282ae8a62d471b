# Copyright 2026 The ironic-multi Authors
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""The housekeeper on the static provider: every action, dry runs, the
quarantine schemes, spare targets."""

import time
from unittest import mock

import pytest

from ironic_multi._reservation import housekeeper as housekeeper_mod
from ironic_multi._reservation import lifecycle
from ironic_multi._reservation.providers import base
from ironic_multi.testing import provider_contract
from ironic_multi.testing import reservers
from ironic_multi.testing import static_nodes

GOLD = provider_contract.GOLD


class Cluster(object):
    """A static inventory, a provider, a housekeeper and a fake Nova."""

    def __init__(self, tmp_path, **options):
        options.setdefault('orphan_grace_period', 0)
        self.conf = reservers.make_conf(**options)
        self.inventory = static_nodes.StaticInventory(tmp_path, self.conf)
        self.provider = None
        self.nova = {}
        self.capacity = {}

    def nodes(self, count):
        uuids = self.inventory.add_nodes(count, GOLD)
        self.provider = self.inventory.provider()
        return uuids

    def consumers(self, instance_uuids):
        return {u: self.nova[u] for u in instance_uuids if u in self.nova}

    def housekeeper(self, consumers=True):
        return housekeeper_mod.Housekeeper(
            self.conf, self.provider,
            consumers=self.consumers if consumers else None,
            capacity=lambda: self.capacity)

    def claim(self, instance, deploy=True, host='host-1'):
        requirements = provider_contract.request()
        reservation = self.provider.claim(
            self.provider.ready_nodes(requirements, None), instance,
            requirements, time.monotonic() + 10)
        if deploy:
            reservation = self.provider.deploy(
                reservation, provider_contract.deployment(instance, host))
        return reservation

    def kinds(self, report):
        return sorted((a.kind, a.instance_uuid or a.node_uuid, a.done)
                      for a in report.actions)


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def test_orphans_are_torn_down_and_released_after_the_grace(tmp_path):
    cluster = Cluster(tmp_path, orphan_grace_period=3600)
    cluster.nodes(3)
    cluster.claim('alive')
    cluster.claim('deleted')
    cluster.claim('never-known')
    cluster.nova = {'alive': 'active', 'deleted': housekeeper_mod.GONE}
    housekeeper = cluster.housekeeper()

    # Not before the grace period...
    assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3601):
        report = housekeeper.run()

    assert cluster.kinds(report) == [
        ('release orphan', 'deleted', True),
        ('release orphan', 'never-known', True)]
    assert {r.instance_uuid for r in cluster.provider.reservations()} == {
        'alive'}


def test_an_orphan_that_comes_back_is_forgiven(tmp_path):
    cluster = Cluster(tmp_path, orphan_grace_period=3600)
    cluster.nodes(1)
    cluster.claim('flaky')
    housekeeper = cluster.housekeeper()
    housekeeper.run()  # first seen gone
    cluster.nova = {'flaky': 'active'}
    housekeeper.run()  # seen alive: forgotten
    cluster.nova = {}
    with mock.patch('time.monotonic', return_value=time.monotonic() + 3601):
        # Gone again, but only just: a new grace period.
        assert housekeeper.run().actions == []
    assert cluster.provider.lookup('flaky') is not None


def test_without_a_consumer_orphans_are_left_alone(cluster):
    cluster.nodes(1)
    cluster.claim('unknown')
    assert cluster.housekeeper(consumers=False).run().actions == []
    assert cluster.provider.lookup('unknown') is not None


def test_dry_run_changes_nothing(cluster):
    cluster.nodes(1)
    cluster.claim('gone')
    report = cluster.housekeeper().run(dry_run=True)
    assert cluster.kinds(report) == [('release orphan', 'gone', False)]
    assert cluster.provider.lookup('gone') is not None


def test_stuck_claims_time_out(tmp_path):
    cluster = Cluster(tmp_path, stuck_claim_timeout=600)
    cluster.nodes(2)
    cluster.claim('stuck', deploy=False)
    cluster.claim('deployed')
    cluster.nova = {'stuck': 'building', 'deployed': 'active'}
    housekeeper = cluster.housekeeper()

    assert housekeeper.run().actions == []
    with mock.patch('time.monotonic', return_value=time.monotonic() + 601):
        report = housekeeper.run()

    assert cluster.kinds(report) == [('time out stuck claim', 'stuck', True)]
    assert cluster.provider.lookup('stuck') is None
    assert cluster.provider.lookup('deployed') is not None


def test_a_failing_teardown_is_counted_then_quarantined(tmp_path):
    script = tmp_path / 'return.sh'
    script.write_text('#!/bin/sh\nexit 1\n')
    script.chmod(0o755)
    cluster = Cluster(tmp_path, static_return_command=str(script),
                      quarantine_after_failures=2)
    (node,) = cluster.nodes(1)
    cluster.claim('deleted')
    housekeeper = cluster.housekeeper()

    first = housekeeper.run()
    assert [(a.kind, a.done) for a in first.actions] == [
        ('release orphan', False)]
    assert 'exit code 1' in first.actions[0].error
    # Kept: the node may hold the tenant's data.
    assert cluster.provider.lookup('deleted').state == lifecycle.State.ERROR

    # The second failure in a row quarantines the node, and the claim of
    # the dead instance goes.
    second = housekeeper.run()
    assert cluster.kinds(second) == [('quarantine', node, True),
                                     ('release orphan', 'deleted', True)]
    (troubled,) = cluster.provider.troubled_nodes()
    assert troubled.quarantined_at is not None
    assert troubled.failures == 2
    assert cluster.provider.lookup('deleted') is None
    assert cluster.provider.ready_nodes(provider_contract.request(),
                                        None) == []


def quarantined(cluster):
    return sorted(t.node_uuid for t in cluster.provider.troubled_nodes()
                  if t.quarantined_at)


@pytest.mark.parametrize('scheme', ['keep', 'cycle'])
def test_max_preserved(tmp_path, scheme):
    cluster = Cluster(tmp_path, quarantine_after_failures=1,
                      max_preserved=2, preserve_scheme=scheme)
    nodes = cluster.nodes(4)
    housekeeper = cluster.housekeeper()
    for node in nodes:
        cluster.provider.record_failure(node, 'deploy failed')
        housekeeper.run()
        time.sleep(0.01)  # quarantine times must differ

    kept = quarantined(cluster)
    assert len(kept) == 2
    if scheme == 'cycle':
        # The newest two; the older ones are back in service.
        assert kept == sorted(nodes[2:])
    else:
        assert kept == sorted(nodes[:2])
    back = set(nodes) - set(kept)
    # Returned nodes have no failures left.
    assert not [t for t in cluster.provider.troubled_nodes()
                if t.node_uuid in back]


def test_spare_targets(tmp_path):
    cluster = Cluster(tmp_path, spare_targets={GOLD: '3', 'silver': '1'})
    cluster.nodes(1)
    cluster.capacity = {GOLD: {'total': 5, 'free': 2}}
    report = cluster.housekeeper().run()
    assert report.short_of_spares == {
        GOLD: {'free': 2, 'target': 3}, 'silver': {'free': 0, 'target': 1}}
    assert report.as_dict()['short_of_spares'] == report.short_of_spares


def test_failed_claims_without_a_node_are_released():
    provider = mock.Mock(spec=base.NodeProvider)
    provider.reservations.return_value = [lifecycle.Reservation(
        instance_uuid='i-1', node_uuid=None, state=lifecycle.State.ERROR)]
    provider.troubled_nodes.return_value = []
    housekeeper = housekeeper_mod.Housekeeper(
        reservers.make_conf(), provider, consumers=lambda uuids: {})
    report = housekeeper.run()
    assert [(a.kind, a.done) for a in report.actions] == [
        ('release failed claim', True)]
    provider.release.assert_called_once_with('i-1')


def test_failed_nodes_are_recovered_then_quarantined():
    provider = mock.Mock(spec=base.NodeProvider)
    provider.reservations.return_value = []
    conf = reservers.make_conf(quarantine_after_failures=2)
    housekeeper = housekeeper_mod.Housekeeper(conf, provider)
    failing = base.TroubledNode(node_uuid='n-1', failures=1,
                                failed_state='clean failed')
    provider.troubled_nodes.return_value = [failing]

    report = housekeeper.run()
    assert [a.kind for a in report.actions] == ['recover node']
    provider.recover.assert_called_once_with('n-1')
    provider.record_failure.assert_called_once()

    provider.troubled_nodes.return_value = [
        base.TroubledNode(node_uuid='n-1', failures=2,
                          failed_state='clean failed')]
    report = housekeeper.run()
    assert [a.kind for a in report.actions] == ['quarantine']
    provider.quarantine.assert_called_once()
