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

# stubs.sh - DevStack's globals and functions, as far as the ironic-multi
# plugin uses them, for tests/devstack/test_plugin.py
#
# Every stub appends one line, its name and arguments, to $STUB_LOG.  The
# INI functions edit real files; files and directories live under
# $STUB_ROOT.  Needs bash only.
#
# Behaviour switches (environment):
#
# - STUB_COMPUTE_REGISTER_AFTER: how many ``compute service list`` polls
#   of a host answer nothing before its service shows up (default 0);
#   ``never`` makes every poll answer nothing.

# The variables below are DevStack's globals: the plugin sourced after
# this file reads them, so they look unused here.
# shellcheck disable=SC2034

: "${STUB_ROOT:?STUB_ROOT must name a scratch directory}"
: "${STUB_LOG:=$STUB_ROOT/calls.log}"
export STUB_LOG
: "${STUB_COMPUTE_REGISTER_AFTER:=0}"

# Globals (stackrc, lib/nova, lib/keystone, lib/etcd3)
# ----------------------------------------------------

HOSTNAME=${STUB_HOSTNAME:-stackhost}
DEST=$STUB_ROOT/opt/stack
DATA_DIR=$DEST/data
GIT_BASE=https://opendev.org
SERVICE_HOST=192.0.2.10
ETCD_PORT=2379
REGION_NAME=RegionOne
KEYSTONE_SERVICE_URI=http://$SERVICE_HOST/identity
ADMIN_PASSWORD="admin-secret"
SERVICE_PASSWORD="service-secret"
SERVICE_PROJECT_NAME=service
: "${ENABLED_SERVICES=key,n-api,n-cond,n-sch,n-cpu,placement-api,etcd3,ir-api,ir-cond}"
: "${DISABLED_SERVICES=}"

NOVA_CONF_DIR=$STUB_ROOT/etc/nova
NOVA_CONF=$NOVA_CONF_DIR/nova.conf
NOVA_CPU_CONF=$NOVA_CONF_DIR/nova-cpu.conf
NOVA_STATE_PATH=$DATA_DIR/nova
NOVA_BIN_DIR=$STUB_ROOT/bin

mkdir -p "$NOVA_CONF_DIR" "$NOVA_STATE_PATH" "$NOVA_BIN_DIR" \
    "$STUB_ROOT/running" "$STUB_ROOT/polls"

# The operator CLI, a program of its own as in DevStack's bin directory.
cat > "$NOVA_BIN_DIR/ironic-multi-manage" <<'EOF'
#!/bin/bash
echo "ironic-multi-manage $*" >> "$STUB_LOG"
EOF
chmod +x "$NOVA_BIN_DIR/ironic-multi-manage"


# Functions
# ---------

function _stub_log {
    echo "$*" >> "$STUB_LOG"
}

# _stub_ini_edit set|delete <file> <section> <option> [<value>]
# Edit one option in place, as DevStack's iniset and inidelete do: a
# missing file or section is created by ``set``.
function _stub_ini_edit {
    local action=$1
    local file=$2
    local section=$3
    local option=$4
    local value=${5:-}
    local line
    local in_section=0
    local written=0
    local -a lines=()
    local -a out=()

    if [[ -f "$file" ]]; then
        mapfile -t lines < "$file"
    elif [[ "$action" == delete ]]; then
        return 0
    fi
    for line in "${lines[@]}"; do
        if [[ "$line" =~ ^\[(.*)\]$ ]]; then
            if [[ $in_section == 1 && $written == 0 && $action == set ]]; then
                out+=("$option = $value")
                written=1
            fi
            in_section=0
            if [[ "${BASH_REMATCH[1]}" == "$section" ]]; then
                in_section=1
            fi
        elif [[ $in_section == 1 \
                && "$line" =~ ^[[:space:]]*([^=#\;[:space:]]+)[[:space:]]*= \
                && "${BASH_REMATCH[1]}" == "$option" ]]; then
            if [[ $action == set && $written == 0 ]]; then
                out+=("$option = $value")
                written=1
            fi
            continue
        fi
        out+=("$line")
    done
    if [[ $action == set && $written == 0 ]]; then
        if [[ $in_section == 0 ]]; then
            out+=("" "[$section]")
        fi
        out+=("$option = $value")
    fi
    printf '%s\n' "${out[@]}" > "$file"
}

function iniset {
    _stub_log "iniset $*"
    if [[ "$1" == -sudo ]]; then
        shift
    fi
    _stub_ini_edit set "$1" "$2" "$3" "$4"
}

function inidelete {
    _stub_log "inidelete $*"
    if [[ "$1" == -sudo ]]; then
        shift
    fi
    _stub_ini_edit delete "$1" "$2" "$3"
}

function echo_summary {
    _stub_log "echo_summary $*"
}

function warn {
    _stub_log "warn $*"
}

function die {
    _stub_log "die $*"
    echo "die: $*" >&2
    exit 1
}

function die_if_not_set {
    local line=$1
    local var=$2
    shift 2
    _stub_log "die_if_not_set $line $var $*"
    if [[ -z "${!var:-}" ]]; then
        die "$line" "$@"
    fi
}

function define_plugin {
    _stub_log "define_plugin $*"
}

function plugin_requires {
    _stub_log "plugin_requires $*"
}

# The special case of DevStack's is_service_enabled that matters here:
# n-cpu-* is enabled with n-cpu (DevStack's fake computes use it).
function is_service_enabled {
    local service
    _stub_log "is_service_enabled $*"
    for service in "$@"; do
        if [[ ",$ENABLED_SERVICES," == *",$service,"* ]]; then
            return 0
        fi
        if [[ "$service" == n-cpu-* \
                && ",$ENABLED_SERVICES," == *",n-cpu,"* ]]; then
            return 0
        fi
    done
    return 1
}

function enable_service {
    local service
    _stub_log "enable_service $*"
    for service in "$@"; do
        if [[ ",$DISABLED_SERVICES," == *",$service,"* ]]; then
            continue
        fi
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES+=",$service"
        fi
    done
}

function git_clone {
    _stub_log "git_clone $*"
    mkdir -p "$2"
}

function setup_develop {
    _stub_log "setup_develop $*"
}

function pip_install {
    _stub_log "pip_install $*"
}

function pip_install_gr {
    _stub_log "pip_install_gr $*"
}

# run_process and stop_process keep the set of running services in
# $STUB_ROOT/running, one empty file per service.
function run_process {
    _stub_log "run_process $*"
    if is_service_enabled "$1"; then
        touch "$STUB_ROOT/running/$1"
    fi
}

function stop_process {
    _stub_log "stop_process $*"
    if is_service_enabled "$1"; then
        rm -f "$STUB_ROOT/running/$1"
    fi
}

# sleep advances bash's clock instead of waiting.
function sleep {
    _stub_log "sleep $*"
    SECONDS=$((SECONDS + $1))
}

# openstack answers what the plugin reads: the UUID of a new node and the
# ID of a registered compute service.
function openstack {
    local host=""
    local polls
    local count
    local prev=""
    local arg

    _stub_log "openstack $*"
    for arg in "$@"; do
        if [[ "$prev" == --host ]]; then
            host=$arg
        fi
        prev=$arg
    done
    if [[ " $* " == *" baremetal node create "* ]]; then
        count=$(cat "$STUB_ROOT/nodes" 2>/dev/null || echo 0)
        count=$((count + 1))
        echo "$count" > "$STUB_ROOT/nodes"
        printf '00000000-0000-4000-8000-%012d\n' "$count"
    elif [[ " $* " == *" compute service list "* && -n "$host" ]]; then
        polls=$STUB_ROOT/polls/$host
        count=$(cat "$polls" 2>/dev/null || echo 0)
        echo $((count + 1)) > "$polls"
        if [[ "$STUB_COMPUTE_REGISTER_AFTER" != never \
                && $count -ge $STUB_COMPUTE_REGISTER_AFTER ]]; then
            echo "service-of-$host"
        fi
    fi
}

# stub_start_nova_compute - What lib/nova's start_nova_compute does
# between the "post-config" and "extra" phases: copy $NOVA_CONF to
# $NOVA_CPU_CONF and start n-cpu with it.
function stub_start_nova_compute {
    _stub_log "== devstack start_nova_compute"
    cp "$NOVA_CONF" "$NOVA_CPU_CONF"
    run_process n-cpu "$NOVA_BIN_DIR/nova-compute --config-file $NOVA_CPU_CONF"
}
