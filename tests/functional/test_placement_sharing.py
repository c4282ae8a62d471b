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

"""Why the computes' capacity is not one sharing provider (issue 29).

Placement's sharing providers would let every compute's allocation
consume one inventory per resource class at once.  An Ironic flavor asks
for its resource class alone (``resources:CUSTOM_X=1``, the standard
classes set to 0), and a sharing provider holding that class satisfies
the whole request: placement's candidates then name the sharing provider
alone, in their allocations and in their provider summaries.  Nova 34's
scheduler looks for compute nodes among the summaries' providers and
keys each host's candidates by the providers in the allocations
(``nova/scheduler/manager.py``): no host gets a candidate, and the build
fails with NoValidHost.  This asks the real placement (in process,
through placement's own test fixture) what it answers.
"""

import uuid

from placement.tests.functional.fixtures import placement as \
    placement_fixture
import pytest
import requests

HEADERS = {'OpenStack-API-Version': 'placement 1.39',
           'X-Auth-Token': 'admin'}


@pytest.fixture
def placement():
    # Placement's own fixture (Nova's functional tests use it too): a
    # database of its own, even after other tests of the process set
    # placement's global one up.
    fixture = placement_fixture.PlacementFixture()
    fixture.setUp()
    try:
        yield _Placement(fixture.endpoint)
    finally:
        fixture.cleanUp()


class _Placement(object):

    def __init__(self, endpoint):
        self._endpoint = endpoint
        self._session = requests.Session()
        self._session.headers.update(HEADERS)

    def __call__(self, method, url, body=None):
        answer = self._session.request(method.upper(), self._endpoint + url,
                                       json=body)
        assert answer.status_code < 400, (url, answer.text)
        return answer.json() if answer.text else None

    def provider(self, name, aggregate, inventories=None, traits=()):
        rp = str(uuid.uuid4())
        self('post', '/resource_providers', {'uuid': rp, 'name': name})
        for path, body in (('aggregates', {'aggregates': [aggregate]}),
                           ('inventories', {'inventories': inventories}),
                           ('traits', {'traits': list(traits)})):
            if body[path]:
                generation = self('get', '/resource_providers/%s'
                                  % rp)['generation']
                self('put', '/resource_providers/%s/%s' % (rp, path),
                     dict(body, resource_provider_generation=generation))
        return rp


def test_a_sharing_provider_alone_answers_an_ironic_flavor(placement):
    aggregate = str(uuid.uuid4())
    placement('post', '/resource_classes', {'name': 'CUSTOM_GOLD'})
    computes = [placement.provider('compute-%d' % i, aggregate)
                for i in (1, 2)]
    shared = placement.provider(
        'gold', aggregate,
        inventories={'CUSTOM_GOLD': {'total': 4, 'max_unit': 1}},
        traits=['MISC_SHARES_VIA_AGGREGATE'])

    found = placement('get', '/allocation_candidates?resources=CUSTOM_GOLD:1')

    assert [sorted(r['allocations']) for r in found['allocation_requests']
            ] == [[shared]]
    # No compute node among the providers Nova's scheduler reads hosts
    # from: it has no host to give the build.
    assert sorted(found['provider_summaries']) == [shared]
    assert not set(computes) & set(found['provider_summaries'])
