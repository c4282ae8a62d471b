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


"""InventoryReporter: when the inventory is told to placement."""

import threading
import time
from unittest import mock

from nova.compute import provider_tree
import pytest

from ironic_multi._virt import capacity
from ironic_multi._virt import consumers
from ironic_multi._virt import inventory
from tests.unit.virt import fakes

# Bound of every wait for another thread.
WAIT = 10


@pytest.fixture
def reporter():
    reserver = fakes.FakeReserver(
        cluster={'baremetal': {'total': 10, 'free': 4}})
    reporter = inventory.InventoryReporter(
        fakes.HOST, reserver, lambda: mock.Mock(name='placement'))
    tree = provider_tree.ProviderTree()
    tree.new_root(fakes.HOST, 'e017ccf2-cbc2-5431-8538-cff32cb8af8e')
    with mock.patch.object(capacity, 'allocations_in_placement',
                           return_value={}), \
            mock.patch.object(consumers, 'given_up', return_value=set()):
        # Reported once: from now on tell() writes.
        reporter.update_provider_tree(tree, fakes.HOST)
        yield reporter


def _until(predicate):
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.01)


def test_nothing_is_told_before_the_first_report():
    reporter = inventory.InventoryReporter(
        fakes.HOST, fakes.FakeReserver(), lambda: mock.Mock())
    with mock.patch.object(capacity, 'tell_placement') as tell:
        reporter.tell()
    tell.assert_not_called()


def test_a_burst_of_calls_makes_two_writes(reporter):
    release = threading.Event()
    writes = []

    def tell_placement(client, context, provider, wanted):
        writes.append(reporter._asked)
        if len(writes) == 1:
            assert release.wait(WAIT)
        return True

    with mock.patch.object(capacity, 'tell_placement',
                           side_effect=tell_placement):
        first = threading.Thread(target=reporter.tell)
        first.start()
        _until(lambda: writes)
        # Four more calls while the first write is under way.
        burst = [threading.Thread(target=reporter.tell) for _ in range(4)]
        for thread in burst:
            thread.start()
        _until(lambda: reporter._asked == 5)
        release.set()
        for thread in [first] + burst:
            thread.join(WAIT)
            assert not thread.is_alive()
    # One write more covers the four, and it began after all of them.
    assert writes == [1, 5]


def test_a_call_after_a_write_began_gets_a_write_of_its_own(reporter):
    writes = []
    with mock.patch.object(capacity, 'tell_placement',
                           side_effect=lambda *a: writes.append(1)):
        reporter.tell()
        reporter.tell()
    assert len(writes) == 2


def test_a_failed_write_lets_the_next_call_write(reporter):
    with mock.patch.object(capacity, 'tell_placement',
                           side_effect=[RuntimeError('placement down'),
                                        True]) as tell:
        reporter.tell()
        reporter.tell()
    assert tell.call_count == 2


def test_a_build_that_leaves_during_a_refresh_waits_for_the_next(reporter):
    # Chaos run, CI 2026-11-29 (KeyError in nova-compute): a build's
    # thread said it leaves after the refresh read placement's
    # allocations, which do not hold it yet.
    gold = {'CUSTOM_BAREMETAL': 1}
    reserver = reporter._reserver
    real = reserver.builds_waiting

    def builds_waiting(waiting):
        reporter.waiting.leaves('scheduled-after-the-read')
        return real(waiting)

    with mock.patch.object(capacity, 'allocations_in_placement',
                           return_value={'held': gold}), \
            mock.patch.object(consumers, 'given_up', return_value=set()), \
            mock.patch.object(reserver, 'builds_waiting', builds_waiting):
        reporter.refresh()
    assert reporter.inventory['CUSTOM_BAREMETAL']['total'] == 10
