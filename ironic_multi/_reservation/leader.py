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

"""One leader in the coordination group at a time.

The leader is the holder of a tooz lock named after the group.  tooz's own
leader election (``watch_elected_as_leader``) exists for Redis, ZooKeeper
and memcached only; every driver has locks, and that is how those drivers
elect anyway.  A dead leader's lock goes with it: with ``file://`` when its
process ends, with Redis and etcd3 when its lock expires, after the
membership timeout (:func:`~.membership.backend_url` sets both).
"""

from oslo_log import log as logging
import tooz

from ironic_multi import exception

LOG = logging.getLogger(__name__)


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

        Never waits: another member's lock means another leader.
        """
        try:
            if self._lock is None:
                lock = self._membership.lock(self._role)
                if lock.acquire(blocking=False):
                    self._lock = lock
                    LOG.info('Member %(member)s now leads %(role)s',
                             {'member': self._membership.member_id,
                              'role': self._role})
            elif not self._still_held():
                LOG.warning('Member %(member)s lost the lead of %(role)s',
                            {'member': self._membership.member_id,
                             'role': self._role})
                self._lock = None
        except (tooz.ToozError, exception.CoordinationUnavailable) as e:
            # Without the backend nobody can be sure to lead: stand down.
            LOG.warning('Cannot tell who leads %(role)s (%(error)s); not '
                        'leading', {'role': self._role, 'error': e})
            self._lock = None
        return self.leading

    def _still_held(self):
        # Redis and etcd3 locks expire when their heartbeat stalls: renewing
        # says whether it is still ours (Redis raises when another member
        # took it).  A file lock lasts as long as this process.
        heartbeat = getattr(self._lock, 'heartbeat', None)
        if heartbeat is None:
            return True
        try:
            return heartbeat() is not False
        except Exception as e:
            LOG.debug('Renewing the %(role)s lock failed: %(error)s',
                      {'role': self._role, 'error': e})
            return False

    def resign(self):
        lock, self._lock = self._lock, None
        if lock is not None:
            try:
                lock.release()
            except (tooz.ToozError, exception.CoordinationUnavailable) as e:
                LOG.warning('Could not give up the lead of %(role)s cleanly '
                            '(%(error)s); it expires with the membership',
                            {'role': self._role, 'error': e})
