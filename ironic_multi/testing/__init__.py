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

"""Test support shipped with ironic-multi, as tooz ships its own.

For this project's tests, the sandbox, the benchmarks, and out-of-tree
node providers:

``ironic_server``
    :class:`~.ironic_server.IronicServer`: a real Ironic (API and
    conductor, ``fake-hardware``) in a subprocess on a free port.
``ironic_nodes``
    :class:`~.ironic_nodes.IronicNodes`: enroll nodes through the API,
    clone them in bulk in the database, snapshot and compare Ironic.
``coordination``
    An etcd of the test's own, and the local Redis, for tooz.
``venvs``
    The virtualenvs the servers run from.
``cloud``
    :class:`~.cloud.Cloud`: a whole OpenStack cloud, every service a
    process of its own (Keystone, Placement, Nova, Glance, Neutron,
    Ironic, RabbitMQ, etcd), K nova-compute processes loading the driver.

Nothing here is imported by the driver or the reservation layer.
"""
