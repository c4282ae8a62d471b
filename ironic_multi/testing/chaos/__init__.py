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

"""Chaos on the multi-process cloud, with every invariant checked.

A seeded workload (boots, bursts over capacity, deletes, reboots, stop
and start, rebuilds) and a seeded fault schedule (compute processes
killed, stopped and restarted; RabbitMQ, Ironic, etcd and the database
restarted or stopped; a compute cut off from etcd; Ironic answering 503,
stalling and losing answers) run at once on a
:class:`~ironic_multi.testing.cloud.Cloud`.  Nova and Ironic are sampled
throughout; after the faults the cloud settles, a compute is killed for
good and taken over, and the promises are checked against Nova's API,
placement, Ironic and the services' logs::

    python -m ironic_multi.testing.chaos --seed 7 --minutes 8

``./tox.sh -e chaos`` runs it; ``tests/cloud/test_chaos.py`` runs a
reduced run (each fault kind once) in CI.  See doc/source/chaos.rst.
"""

from ironic_multi.testing.chaos.run import ChaosRun  # noqa: F401
from ironic_multi.testing.chaos.run import Options  # noqa: F401
