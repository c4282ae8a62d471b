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

"""Nova's concurrency mode, chosen before anything imports eventlet.

Nova chooses eventlet or native threads once per process, when
``nova.monkey_patch`` patches; tooz and futurist import eventlet when
they can.  Call :func:`choose` before anything imports them (tooz, the
reservation layer, Nova's services); :mod:`.nova_services` does on
import.
"""

import logging
import os
import sys


def choose():
    """Nova's concurrency mode, as nova.tests.functional would choose it.

    Native threads unless ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` says
    otherwise.  With native threads Nova refuses to start once eventlet
    is imported, even unpatched: tooz and futurist import it when they
    can, and importing ``ironic_multi`` may have imported them before.
    Unpatched eventlet does no harm to native threads (the functional
    tests ran both ways), so native threads are selected all the same,
    with one line in the log at INFO (Nova's own text calls it "a bug",
    which it is not here, and the first line a sandbox printed was that
    warning), and Nova's check is disabled for the process
    (``nova.tests.functional`` patches again when imported).  Calling
    it again does nothing more.
    """
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
    from nova import monkey_patch

    try:
        monkey_patch.patch()
    except RuntimeError:
        if monkey_patch.is_patched() or 'eventlet' not in sys.modules:
            raise
        logging.getLogger(__name__).info(
            'Nova runs with native threads; eventlet, imported unpatched '
            'by tooz or futurist before Nova chose, stays unused')
        monkey_patch.poison_eventlet = lambda: None
        monkey_patch.patch()
