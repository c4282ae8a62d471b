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

from oslo_config import cfg
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def register_tolerant(conf, opts, group):
    """Register ``opts`` in ``group``, keeping options registered before.

    Nova registers its own ``[ironic]`` options; an option of the same name
    that differs in help text or default must not stop nova-compute from
    loading this driver.
    """
    for opt in opts:
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            LOG.debug('Option [%s]%s is already registered; keeping the '
                      'existing definition', group, opt.dest)
