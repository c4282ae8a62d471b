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

"""Which nodes with this group's failure marks are still the group's."""

import pytest

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import provider

GROUP = 'ironic-multi'
STAMP = '2026-11-26T10:00:00.000000+00:00'
LATER = '2026-11-26T11:00:00.000000+00:00'


def node(state='deploy failed', stamp=STAMP, pin=STAMP, **fields):
    marks = {'group': GROUP, 'failures': 3, 'reason': 'deploy failed'}
    if pin is not None:
        marks[provider._PIN] = pin
    return dict({'uuid': 'n-1', 'provision_state': state,
                 'provision_updated_at': stamp, 'instance_uuid': None,
                 'maintenance': False, 'maintenance_reason': None,
                 'extra': {provider._MARKS: marks}}, **fields)


def left_alone(found, group=None):
    return provider._why_left_alone(found, group)


@pytest.mark.parametrize('state', ['deploy failed', 'error', 'clean failed',
                                   'available', 'manageable', 'enroll'])
def test_marks_pinned_to_the_state_at_rest_are_the_groups(state):
    assert left_alone(node(state)) is None


@pytest.mark.parametrize('state', ['active', 'deploying', 'wait call-back',
                                   'rescue', 'service failed', 'cleaning',
                                   'deleting'])
def test_a_node_deployed_or_busy_is_never_the_groups(state):
    # Pinned or not: another deployer's deployment holds no instance_uuid.
    assert 'it is %s' % state in left_alone(node(state))


def test_marks_from_before_the_last_change_of_state_are_history():
    assert 'the marks are history' in left_alone(node(stamp=LATER))
    # Marks of versions that pinned nothing: history too.
    assert 'the marks are history' in left_alone(node(pin=None))


def test_maintenance_is_only_ours_when_it_is_our_quarantine():
    theirs = node(maintenance=True, maintenance_reason='disk swap')
    assert 'maintenance set by someone else (disk swap)' in left_alone(
        theirs)
    ours = node(maintenance=True,
                maintenance_reason=provider._QUARANTINE_PREFIX + 'x')
    ours['extra'][provider._MARKS]['quarantined_at'] = 1.0
    assert left_alone(ours) is None
    # Our quarantine's reason, but no quarantine mark: someone's copy.
    ours['extra'][provider._MARKS].pop('quarantined_at')
    assert 'maintenance set by someone else' in left_alone(ours)


def test_a_held_node_is_the_groups_only_under_its_mark():
    held = node(instance_uuid='i-1', instance_info={
        ownership.KEY: {'i-1': ownership.mark(GROUP)}})
    assert left_alone(held, GROUP) is None
    # The listing reads no instance_info: a holder is someone's business.
    assert left_alone(dict(held, instance_info=None), GROUP) == (
        'it holds instance i-1')
    theirs = dict(held, instance_info={
        ownership.KEY: {'i-1': ownership.mark('another-group')}})
    assert left_alone(theirs, GROUP) == 'it holds instance i-1'


def test_only_an_available_node_is_returned_from_quarantine():
    assert provider._returnable(node('available'))
    for state in ('error', 'deploy failed', 'clean failed', 'manageable'):
        assert not provider._returnable(node(state))
    assert not provider._returnable(node('available', instance_uuid='i-1'))
