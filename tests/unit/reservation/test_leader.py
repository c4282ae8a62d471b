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

"""Leadership over tooz's real ZooKeeper and etcd3 lock classes.

No ZooKeeper or etcd server runs here: the kazoo client and the etcd3gw
client beneath tooz's locks are mocks that answer as their servers would
for a lock that is still this member's, another member's, or gone.  The
lock classes, their acquire and their ownership checks are tooz's own.
"""

import logging
from unittest import mock

import etcd3gw
from etcd3gw import exceptions as etcd3_exc
from kazoo import client as kazoo_client
from kazoo import exceptions as kazoo_exc
from kazoo.handlers import threading as kazoo_threading
from kazoo.recipe import lock as kazoo_lock
import pytest
from tooz import coordination as tooz_coordination
from tooz.drivers import etcd3gw as tooz_etcd3
from tooz.drivers import zookeeper as tooz_zookeeper

from ironic_multi._reservation import leader
from ironic_multi._reservation import membership
from ironic_multi import exception
from tests.unit.reservation import fakes

ROLE = 'housekeeper'
NAME = b'ironic-multi.housekeeper'


@pytest.fixture(scope='module')
def member(tmp_path_factory):
    """A started member whose locks each test hands out."""
    started = membership.Membership(
        'file://%s' % tmp_path_factory.mktemp('coordination'), 'g', 5,
        host='a')
    started.start()
    yield started
    started.stop()


def leading(member, lock):
    lead = leader.Leadership(member, ROLE)
    with mock.patch.object(member, 'lock', return_value=lock):
        assert lead.try_lead()
    return lead


# -- ZooKeeper ---------------------------------------------------------------

class ZooKeeper(object):
    """tooz's ZooKeeperLock over kazoo's Lock recipe and a mocked client.

    The lock's own znode holds its identifier; ``owner`` is what a read of
    that znode answers: this member's identifier, another's (the znode's
    sequence was reused after a session expiry), or an exception.
    """

    def __init__(self):
        self.client = mock.create_autospec(kazoo_client.KazooClient,
                                           instance=True)
        self.client.handler = kazoo_threading.SequentialThreadingHandler()
        self.recipe = kazoo_lock.Lock(self.client, '/tooz/locks/housekeeper',
                                      identifier='member-a')
        self.owner = self.recipe.data
        self.client.get.side_effect = self._get
        self.recipe.acquire = self._acquire
        self.recipe.release = mock.Mock(return_value=True)
        self.lock = tooz_zookeeper.ZooKeeperLock(NAME, self.recipe)

    def _acquire(self, blocking=True, timeout=None, **kwargs):
        self.recipe.node = '7f2c__lock__0000000003'
        self.recipe.is_acquired = True
        return True

    def _get(self, path):
        assert path == '/tooz/locks/housekeeper/7f2c__lock__0000000003'
        if isinstance(self.owner, Exception):
            raise self.owner
        return self.owner, mock.sentinel.stat


def test_zookeeper_a_leader_asks_its_lock_znode(member):
    zk = ZooKeeper()
    lead = leading(member, zk.lock)
    lead.confirm()
    assert lead.try_lead()
    # The answer came from the lock's znode (is_still_owner), not from a
    # heartbeat, which tooz's ZooKeeper lock does not have.
    assert zk.client.get.call_count == 2
    zk.recipe.release.assert_not_called()


@pytest.mark.parametrize('answer', [
    b'member-b',  # another member holds the lock now
    kazoo_exc.NoNodeError(),  # the session expired: its znode is gone
    kazoo_exc.ConnectionLoss(),
    kazoo_exc.KazooException('bad arguments'),  # tooz: ToozError
], ids=['another-member', 'znode-gone', 'connection-lost', 'kazoo-error'])
@pytest.mark.parametrize('check', ['try_lead', 'confirm'])
def test_zookeeper_a_lost_or_unknown_lock_stands_the_leader_down(
        member, answer, check):
    zk = ZooKeeper()
    lead = leading(member, zk.lock)
    zk.owner = answer
    if check == 'confirm':
        with pytest.raises(exception.LeadershipLost):
            lead.confirm()
    else:
        assert not lead.try_lead()
    assert not lead.leading
    zk.client.get.assert_called_once()
    # It gave its own znode up.
    zk.recipe.release.assert_called_once_with()


# -- etcd3 --------------------------------------------------------------------

class Etcd3(object):
    """tooz's Etcd3Lock over a mocked etcd3gw client.

    ``owned`` is what etcd answers to the comparison of the lock key's
    value with this lock's own (True, False), or an exception it raises.
    """

    def __init__(self):
        self.client = mock.create_autospec(etcd3gw.Etcd3Client,
                                           instance=True)
        self.client.lease.return_value = mock.Mock(id=7)
        self.client.transaction.side_effect = self._transaction
        coord = mock.Mock(client=self.client, _acquired_locks=set())
        self.lock = tooz_etcd3.Etcd3Lock(coord, NAME, 10)
        self.owned = True
        self.compared = []

    def _transaction(self, txn):
        (compare,) = txn['compare']
        if compare['target'] == 'CREATE':  # acquire
            return {'succeeded': True}
        if compare['target'] == 'VALUE' and not txn['success']:
            self.compared.append(compare)
            if isinstance(self.owned, Exception):
                raise self.owned
            return {'succeeded': self.owned}
        return {'succeeded': True}  # release


def test_etcd3_a_leader_compares_its_lock_key_value(member):
    etcd = Etcd3()
    lead = leading(member, etcd.lock)
    lead.confirm()
    assert etcd.compared == [{'key': etcd.lock._key_b64, 'result': 'EQUAL',
                              'target': 'VALUE', 'value': etcd.lock._uuid}]
    etcd.owned = False
    with pytest.raises(exception.LeadershipLost) as e:
        lead.confirm()
    assert 'lost the lock to another member' in str(e.value)
    assert not lead.leading


def _tooz_renamed_its_key(lock):
    del lock._key_b64


def _tooz_dropped_the_client(lock):
    lock._coord = object()


@pytest.mark.parametrize('change, named', [
    (_tooz_renamed_its_key, 'AttributeError'),
    (_tooz_dropped_the_client, 'AttributeError'),
    # Called beneath tooz, so not translated into a ToozError.
    (lambda lock: None, 'ConnectionFailedError'),
], ids=['renamed-key', 'no-client', 'etcd-unreachable'])
@pytest.mark.parametrize('check', ['try_lead', 'confirm'])
def test_etcd3_an_unexpected_error_is_unknown_and_stands_down(
        member, caplog, change, named, check):
    """tooz's private attributes may change in any release of it."""
    etcd = Etcd3()
    lead = leading(member, etcd.lock)
    change(etcd.lock)
    # tooz's own release would use tooz's own new names.
    etcd.lock.release = mock.Mock(return_value=True)
    etcd.owned = etcd3_exc.ConnectionFailedError()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=leader.__name__):
        if check == 'confirm':
            with pytest.raises(exception.LeadershipLost) as e:
                lead.confirm()
            assert 'cannot tell' in str(e.value)
        else:
            assert not lead.try_lead()
    assert not lead.leading
    etcd.lock.release.assert_called_once_with()
    named_it = [r for r in caplog.records if named in r.getMessage()]
    assert len(named_it) == 1, caplog.text
    assert named_it[0].levelno == logging.WARNING


@pytest.mark.parametrize('answer', [
    etcd3_exc.ConnectionFailedError(), {'succeeded': False}],
    ids=['etcd-unreachable', 'key-now-anothers'])
def test_etcd3_a_lock_not_released_is_renewed_no_more(member, answer):
    """tooz's etcd3 heartbeat renews every lock of _acquired_locks.

    A lock whose release failed stayed there: its lease was renewed for
    as long as the process lived, and nobody could lead again.
    """
    etcd = Etcd3()
    lead = leading(member, etcd.lock)
    assert etcd.lock in etcd.lock._coord._acquired_locks

    def release(txn):
        if isinstance(answer, Exception):
            raise answer
        return answer

    etcd.client.transaction.side_effect = release
    lead.resign()
    assert not lead.leading
    assert etcd.lock not in etcd.lock._coord._acquired_locks


def test_etcd3_a_released_lock_is_tooz_s_to_forget(member):
    etcd = Etcd3()
    lead = leading(member, etcd.lock)
    lead.resign()
    assert etcd.lock not in etcd.lock._coord._acquired_locks
    assert etcd.client.transaction.call_count == 2  # acquire, release


@pytest.mark.parametrize('error', [
    tooz_coordination.ToozConnectionError('etcd is down'),
    exception.CoordinationUnavailable(url='etcd3+http://x', reason='down'),
], ids=['tooz', 'membership'])
def test_a_lock_that_cannot_be_given_up_is_let_expire(caplog, error):
    """The housekeeping lead and takeover locks share this way out."""
    membership_ = mock.Mock()
    membership_.call.side_effect = error
    lock = mock.Mock()
    with mock.patch.object(leader, 'forget') as forget, caplog.at_level(
            logging.WARNING, logger=leader.__name__):
        leader.give_up(membership_, lock, 'a takeover lock')
    membership_.call.assert_called_once_with(
        'releasing a takeover lock', leader.release, lock)
    forget.assert_called_once_with(lock)
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(
        'Could not release a takeover lock cleanly (')


def test_a_lock_given_up_cleanly_is_not_forgotten():
    membership_ = mock.Mock()
    lock = mock.Mock()
    with mock.patch.object(leader, 'forget') as forget:
        leader.give_up(membership_, lock, 'the housekeeping lock')
    membership_.call.assert_called_once_with(
        'releasing the housekeeping lock', leader.release, lock)
    forget.assert_not_called()


# -- an acquire that answers after the call bound --------------------------

@pytest.fixture
def impatient(tmp_path):
    """A member whose backend calls give up after 1 s, over fake locks."""
    started = membership.Membership('file://%s' % tmp_path, 'g', 1,
                                    host='a')
    started.start()
    locks = fakes.Locks()
    with mock.patch.object(started, 'lock', side_effect=locks.lock):
        yield started, locks
    started.stop()


def test_a_lead_taken_after_the_bound_is_given_back(impatient):
    """The acquire the member gave up on takes the lock later.

    Nobody knew it held the lock (tooz's etcd3 heartbeat renews it for
    good): nobody, this member included, could lead again.
    """
    member, locks = impatient
    lead = leader.Leadership(member, ROLE)
    locks.stall()
    assert not lead.try_lead()
    (late,) = locks.holders.values()
    locks.answer()
    assert late.answered.wait(5)
    assert locks.free(ROLE)
    assert lead.try_lead()
    lead.confirm()


def test_a_late_refusal_leaves_the_holder_alone(impatient):
    member, locks = impatient
    holder = locks.lock(ROLE)
    assert holder.acquire(False)
    lead = leader.Leadership(member, ROLE)
    locks.stall()
    with mock.patch.object(leader, 'give_up') as give_up:
        assert not lead.try_lead()
        locks.answer()
        assert not locks.free(ROLE, timeout=0.5)
    give_up.assert_not_called()
    assert locks.holders == {ROLE: holder}
