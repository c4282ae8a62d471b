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

"""One leader in the coordination group at a time, fenced.

The leader is the holder of a tooz lock named after the group.  tooz's own
leader election (``watch_elected_as_leader``) exists for Redis, ZooKeeper
and memcached only; every driver has locks, and that is how those drivers
elect anyway.  A dead leader's lock goes with it: with ``file://`` when its
process ends, with Redis and etcd3 when its lock expires, after the
membership timeout (:func:`~.membership.backend_url` sets both).

A leader that was paused longer than that (GC, VM pause, a partition)
must learn that another member took the lock, or there are two.
Renewing its own lock does not tell: tooz's etcd3 lock renews an expired
lease without a word, and its ZooKeeper lock has no renewal at all.
:func:`still_owner` asks the backend who holds the lock, the way each
backend can answer; when it cannot say, the leader stands down.  The
housekeeper asks it again before each destructive action
(:meth:`Leadership.confirm`).
"""

import typing

from oslo_log import log as logging
import tooz
from tooz import locking

from ironic_multi import exception

LOG = logging.getLogger(__name__)


def still_owner(lock):
    """Whether the backend says ``lock`` is still held by this member.

    :returns: True or False; None when the backend has no way to say.
    :raises tooz.ToozError: the backend failed to answer.
    """
    try:
        return bool(lock.is_still_owner())
    except tooz.NotImplemented:
        if type(lock).__module__ != 'tooz.drivers.etcd3gw':
            return None
    try:
        return _etcd3_still_owner(lock)
    except Exception as e:
        # It reads tooz's private attributes, which any release of tooz
        # may change, and calls etcd3gw beneath tooz's error translation:
        # whatever goes wrong, nobody can say, and the leader stands down.
        LOG.warning('Cannot ask etcd3 whether this member still holds lock '
                    '%(name)s (%(type)s: %(error)s): taking it as unknown',
                    {'name': lock.name, 'type': type(e).__name__,
                     'error': e})
        return None


def cannot_tell_owner(coordinator):
    """Whether :func:`still_owner` can never answer for this driver's locks.

    Then every leader stands down at its first check, and nobody ever
    keeps house (tooz's ``ipc://`` locks).  The lock class is read from
    the annotation of the driver's ``get_lock``: some drivers make no
    lock before they start.  False when the annotation does not tell.
    """
    try:
        lock_class = typing.get_type_hints(
            type(coordinator).get_lock).get('return')
    except Exception:
        # An annotation that does not resolve: nothing to go by.
        return False
    if not (isinstance(lock_class, type)
            and issubclass(lock_class, locking.Lock)):
        return False
    return (lock_class.is_still_owner is locking.Lock.is_still_owner
            and lock_class.__module__ != 'tooz.drivers.etcd3gw')


def _etcd3_still_owner(lock):
    # tooz's Etcd3Lock stores a random value of its own under the lock's
    # key (and deletes the key by comparing it on release): the lock is
    # ours while the key holds that value.  An expired lease deleted the
    # key; another member's acquire wrote its own value.
    answer = lock._coord.client.transaction({
        'compare': [{'key': lock._key_b64, 'result': 'EQUAL',
                     'target': 'VALUE', 'value': lock._uuid}],
        'success': [], 'failure': []})
    return answer.get('succeeded', False) is True


def release(lock):
    """Give ``lock`` up; if the backend cannot take it, let it expire.

    tooz's etcd3 lock keeps a lock whose release failed (etcd did not
    answer, or the key is another's now) among those its heartbeat
    renews: the lease would never expire, and nobody could take the lock
    again until this process ends (the chaos run's etcd restart showed a
    group without a leader for good).  It is dropped from there, so its
    lease expires within the lock's timeout.  Other drivers drop it
    themselves.

    :returns: whether the backend released it.
    :raises tooz.ToozError: the backend failed (the lock will expire).
    """
    released = False
    try:
        released = bool(lock.release())
        return released
    finally:
        if not released:
            forget(lock)


def take(membership, lock, what):
    """Take ``lock`` if nobody holds it, through ``membership``, bounded.

    Never waits for another holder.  An acquire that outlives the
    membership's call bound goes on in a daemon thread; should it
    succeed there, this member would hold a lock that it does not know
    of (tooz's etcd3 heartbeat renews it for good, a ZooKeeper lock node
    lives with the session), and nobody could take it again until the
    process ends.  It is given back as soon as it answers.

    :param what: the lock, for the logs (``'the housekeeper lock'``).
    :returns: whether this member holds the lock now.
    :raises tooz.ToozError, CoordinationUnavailable: the backend failed,
        or did not answer in time.
    """
    def give_back(acquired):
        if acquired:
            LOG.warning('Took %s after giving up waiting for it; giving it '
                        'back', what)
            give_up(membership, lock, what)

    return membership.call('taking %s' % what, lock.acquire, False,
                           late=give_back)


def give_up(membership, lock, what):
    """Release ``lock`` through ``membership``, or let it expire.

    Never raises: a lock the backend did not take back expires with the
    membership (:func:`release`).

    :param what: the lock, for the logs (``'the housekeeping lock'``).
    """
    try:
        membership.call('releasing %s' % what, release, lock)
    except (tooz.ToozError, exception.CoordinationUnavailable) as e:
        # The call may still be waiting for the backend.
        forget(lock)
        LOG.warning('Could not release %(what)s cleanly (%(error)s); it '
                    'expires with the membership',
                    {'what': what, 'error': e})


def forget(lock):
    """Stop renewing ``lock`` (tooz's etcd3 driver): it expires."""
    if type(lock).__module__ != 'tooz.drivers.etcd3gw':
        return
    try:
        lock._coord._acquired_locks.discard(lock)
    except Exception as e:
        # tooz's private attributes may change in any release of it.
        LOG.warning('Cannot stop renewing lock %(name)s (%(type)s: '
                    '%(error)s): it may outlive this member\'s lead',
                    {'name': lock.name, 'type': type(e).__name__,
                     'error': e})


class Leadership(object):
    """Whether this member leads ``role``; ask before each pass.

    :param membership: a :class:`~.membership.Membership`.
    :param role: what the leader does (the lock's name).
    """

    def __init__(self, membership, role):
        self._membership = membership
        self._role = role
        self._lock = None

    @property
    def leading(self):
        return self._lock is not None

    def try_lead(self):
        """Lead if nobody else does; True when this member leads.

        Never waits: another member's lock means another leader.  A
        member that leads asks the backend whether it still does.
        """
        try:
            if self._lock is None:
                lock = self._membership.lock(self._role)
                if take(self._membership, lock, 'the %s lock' % self._role):
                    self._lock = lock
                    LOG.info('Member %(member)s now leads %(role)s',
                             {'member': self._membership.member_id,
                              'role': self._role})
            else:
                self._check()
        except exception.LeadershipLost as e:
            LOG.warning('%s', e)
        except (tooz.ToozError, exception.CoordinationUnavailable) as e:
            # Without the backend nobody can be sure to lead: stand down,
            # giving the lock up if the backend still listens (a ZooKeeper
            # lock's node would otherwise outlive the lead, and block the
            # next leader, for as long as the session lives).
            LOG.warning('Cannot tell who leads %(role)s (%(error)s); not '
                        'leading', {'role': self._role, 'error': e})
            self._stand_down()
        return self.leading

    def confirm(self):
        """Check with the backend that this member still leads.

        For right before a destructive action: the first doubt stops it.

        :raises LeadershipLost: it does not, or the backend cannot say
            (the member stands down).
        """
        if self._lock is None:
            raise exception.LeadershipLost(role=self._role,
                                           reason='this member does not lead')
        try:
            self._check()
        except (tooz.ToozError, exception.CoordinationUnavailable) as e:
            self._stand_down()
            raise exception.LeadershipLost(
                role=self._role, reason='the coordination backend cannot '
                                        'say who leads: %s' % e)

    def _check(self):
        owned = self._membership.call('checking the %s lock' % self._role,
                                      still_owner, self._lock)
        if owned:
            return
        self._stand_down()
        raise exception.LeadershipLost(
            role=self._role,
            reason='member %s %s' % (
                self._membership.member_id,
                'lost the lock to another member' if owned is False else
                'cannot tell from this backend whether it still holds it'))

    def _stand_down(self):
        lock, self._lock = self._lock, None
        if lock is not None:
            LOG.warning('Member %(member)s stands down from leading '
                        '%(role)s', {'member': self._membership.member_id,
                                     'role': self._role})
            self._release(lock)

    def resign(self):
        lock, self._lock = self._lock, None
        if lock is not None:
            self._release(lock)

    def _release(self, lock):
        give_up(self._membership, lock, 'the %s lock' % self._role)
