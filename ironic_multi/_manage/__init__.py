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

"""The operator CLI, ``ironic-multi-manage``, behind its console script.

Private: the command line is the interface, not these modules.  A cliff
application (:mod:`.app`) with one small module per command group; each
command reads what it shows from the node provider built from the
configuration and from the coordination group, which it joins as an
operator member (owning no shard), and asks the running services for
what only they can do (:mod:`ironic_multi._reservation.board`).
"""
