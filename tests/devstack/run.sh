#!/bin/bash
#
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

# run.sh - Run the ironic-multi DevStack plugin the way DevStack does, in
# one shell, with DevStack's functions stubbed (stubs.sh)
#
#   STUB_ROOT=DIR run.sh STEP...
#
# A step is ``MODE`` or ``MODE:PHASE`` (``stack:install``, ``unstack``,
# ...): the plugin is sourced as ``plugin.sh MODE PHASE``.  The step
# ``n-cpu`` does what DevStack does between "post-config" and "extra":
# start n-cpu.  Like stack.sh, the shell stops at the first error; unlike
# it, also at the first unset variable.  Settings come from the
# environment, as from local.conf.

# shellcheck source-path=SCRIPTDIR
set -o errexit
set -o nounset

_STUB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_STUB_TOP=$(cd "$_STUB_DIR/../.." && pwd)

# shellcheck source=stubs.sh
source "$_STUB_DIR/stubs.sh"
# DevStack sources a plugin's settings once per stack.sh, unstack.sh or
# clean.sh, before its first phase.
_stub_log "== source settings"
# shellcheck source=../../devstack/settings
source "$_STUB_TOP/devstack/settings"

for _step in "$@"; do
    if [[ "$_step" == n-cpu ]]; then
        stub_start_nova_compute
        continue
    fi
    _stub_log "== ${_step/:/ }"
    if [[ "$_step" == *:* ]]; then
        # shellcheck source=../../devstack/plugin.sh
        source "$_STUB_TOP/devstack/plugin.sh" "${_step%%:*}" "${_step#*:}"
    else
        # shellcheck source=../../devstack/plugin.sh
        source "$_STUB_TOP/devstack/plugin.sh" "$_step"
    fi
    _stub_log "xtrace $(set +o | grep xtrace)"
done
