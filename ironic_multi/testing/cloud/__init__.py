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

"""A real multi-process OpenStack cloud on one machine, for tests.

Every service is a process of its own, from packages only: Keystone,
Placement, the Nova API (waitress, behind Keystone), nova-conductor,
nova-scheduler, K nova-compute processes loading
``ironic_multi.IronicMultiDriver``, Glance (file store), Neutron (ML2),
Ironic with fake hardware, a RabbitMQ broker, databases and an etcd of
the cloud's own.  One fixture, :class:`Cloud`, starts and stops it all::

    with Cloud(computes=3, nodes=24) as cloud:
        cloud.openstack('server', 'create', '--flavor', 'gold',
                        '--image', 'cirros', '--nic', 'none', '--wait',
                        's1')
        cloud.kill('nova-compute-compute-2')

One module per service writes its configuration and makes its
:class:`~.process.Service`.  See doc/source/cloud.rst.
"""

from ironic_multi.testing.cloud.cloud import Cloud  # noqa: F401
from ironic_multi.testing.cloud.cloud import CloudError  # noqa: F401
