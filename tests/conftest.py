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

"""Process-wide decisions, made before any test module is imported.

1. Concurrency: Nova picks eventlet or native threads once per process,
   and refuses native threads if anything imported eventlet before
   (tooz and futurist import it when they can).  Native threads are the
   default, as in tox.ini; ``OS_NOVA_DISABLE_EVENTLET_PATCHING=0`` selects
   eventlet.
2. Options: Nova registers its ``[ironic]`` options without tolerating
   duplicates, while ``ironic_multi.conf`` keeps a definition registered
   before its own.  So Nova's go first, then ours, on the global CONF, as
   in nova-compute.

Without Nova installed (the reservation layer alone) both are skipped.
"""

import os

import pytest

os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')

try:
    from nova import monkey_patch
except ImportError:
    monkey_patch = None

if monkey_patch is not None:
    monkey_patch.patch()
    import nova.conf  # noqa: F401

from ironic_multi import conf  # noqa: E402

conf.register_opts(conf.CONF)

# The provider contract lives outside test modules: let pytest explain
# its failed assertions too.
pytest.register_assert_rewrite('ironic_multi.testing.provider_contract')
