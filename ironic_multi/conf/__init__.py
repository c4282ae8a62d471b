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

"""Configuration options of ironic-multi.

Options are declared once, in the modules of this package, and registered
on the global ``CONF`` when this package is imported, except the
``[ironic]`` group: Nova registers that group too and does not tolerate a
definition that came first, so ours are registered when Ironic is first
used (:func:`ironic.register_opts`), keeping Nova's where it has them.
"""

from oslo_config import cfg

from ironic_multi.conf import coordination
from ironic_multi.conf import driver
from ironic_multi.conf import groups
from ironic_multi.conf import reservation

IRONIC_MULTI_OPTS = coordination.OPTS + reservation.OPTS + driver.OPTS


def register_opts(conf):
    """Register the ``[ironic_multi]`` options on ``conf``."""
    conf.register_group(groups.IRONIC_MULTI)
    conf.register_opts(IRONIC_MULTI_OPTS, group=groups.IRONIC_MULTI)


CONF = cfg.CONF
register_opts(CONF)
