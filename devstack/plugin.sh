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

# plugin.sh - DevStack plugin of ironic-multi
#
# DevStack sources this file as ``plugin.sh <mode> [<phase>]``, with its
# functions and the variables of devstack/settings defined.  The entry
# points, in the order DevStack reaches them:
#
# - ``stack install``: install_ironic_multi
# - ``stack post-config``: configure_ironic_multi
# - ``stack extra``: enroll_ironic_multi_fake_nodes,
#   assign_ironic_multi_shards, start_ironic_multi_computes
# - ``stack test-config``: nothing
# - ``unstack``: stop_ironic_multi_computes
# - ``clean``: cleanup_ironic_multi
#
# The driver's options go to $NOVA_CONF in "post-config": DevStack copies
# $NOVA_CONF to $NOVA_CPU_CONF when it starts n-cpu, after that phase.  The
# K-1 extra nova-compute services run with $NOVA_CPU_CONF plus a small file
# of their own (``[DEFAULT] host`` and ``state_path``), the way DevStack
# runs the computes of its fake virt driver; they start in "extra", once
# $NOVA_CPU_CONF exists, and before DevStack discovers the compute hosts.

# Save trace setting
_XTRACE_IRONIC_MULTI=$(set +o | grep xtrace)
set -o xtrace


# Functions
# ---------

# _ironic_multi_coordination_url - The tooz URL shared by the K services
function _ironic_multi_coordination_url {
    if [[ -n "$IRONIC_MULTI_COORDINATION_URL" ]]; then
        echo "$IRONIC_MULTI_COORDINATION_URL"
    elif is_service_enabled etcd3; then
        echo "etcd3+http://${SERVICE_HOST}:${ETCD_PORT:-2379}"
    else
        echo "file://${IRONIC_MULTI_DATA_DIR}/coordination"
    fi
}

# _ironic_multi_extra_indexes - The numbers 2..K of the extra computes
function _ironic_multi_extra_indexes {
    seq 2 "$IRONIC_MULTI_COMPUTES"
}

# _ironic_multi_indexes_on_disk - The numbers of the extra computes that
# have a configuration file, also those of an earlier, larger K
function _ironic_multi_indexes_on_disk {
    local conf
    for conf in "$NOVA_CONF_DIR"/nova-cpu-im*.conf; do
        [[ -f "$conf" ]] || continue
        conf=${conf##*/nova-cpu-im}
        echo "${conf%.conf}"
    done | sort -n
}

# _ironic_multi_conf <n> - The configuration file of extra compute <n>
function _ironic_multi_conf {
    echo "$NOVA_CONF_DIR/nova-cpu-im$1.conf"
}

# _ironic_multi_check_settings - Die on settings that cannot work
function _ironic_multi_check_settings {
    if ! [[ "$IRONIC_MULTI_COMPUTES" =~ ^[1-9][0-9]*$ ]]; then
        die $LINENO "IRONIC_MULTI_COMPUTES must be 1 or more," \
            "not '$IRONIC_MULTI_COMPUTES'"
    fi
    if ! [[ "$IRONIC_MULTI_SHARD_COUNT" =~ ^[0-9]+$ ]]; then
        die $LINENO "IRONIC_MULTI_SHARD_COUNT must be a number," \
            "not '$IRONIC_MULTI_SHARD_COUNT'"
    fi
    if ! [[ "$IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT" =~ ^[0-9]+$ ]]; then
        die $LINENO "IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT must be a number" \
            "of seconds, not '$IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT'"
    fi
    if ! [[ "$IRONIC_MULTI_FAKE_NODES" =~ ^[0-9]+$ ]]; then
        die $LINENO "IRONIC_MULTI_FAKE_NODES must be a number," \
            "not '$IRONIC_MULTI_FAKE_NODES'"
    fi
    if [[ "$IRONIC_MULTI_AUTH_SCOPE" != system \
            && "$IRONIC_MULTI_AUTH_SCOPE" != project ]]; then
        die $LINENO "IRONIC_MULTI_AUTH_SCOPE must be system or project," \
            "not '$IRONIC_MULTI_AUTH_SCOPE'"
    fi
}

# install_ironic_multi - Install the package next to nova-compute
function install_ironic_multi {
    git_clone "$IRONIC_MULTI_REPO" "$IRONIC_MULTI_DIR" "$IRONIC_MULTI_BRANCH"
    # setup_develop installs where DevStack installed Nova: its global
    # virtualenv ($DEVSTACK_VENV, GLOBAL_VENV=True) or the system Python.
    setup_develop "$IRONIC_MULTI_DIR"
    if [[ "$(_ironic_multi_coordination_url)" == etcd3+* ]]; then
        # tooz reaches etcd3+http:// through etcd3gw, an optional
        # dependency of tooz.
        pip_install_gr etcd3gw
    fi
}

# _configure_ironic_multi_auth - The [ironic] group: keystoneauth options,
# as for Nova's in-tree Ironic driver
function _configure_ironic_multi_auth {
    local conf=$1
    local username=$IRONIC_MULTI_USERNAME
    local password=$IRONIC_MULTI_PASSWORD

    iniset "$conf" ironic auth_type password
    iniset "$conf" ironic auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf" ironic user_domain_name "$IRONIC_MULTI_USER_DOMAIN_NAME"
    iniset "$conf" ironic region_name "$REGION_NAME"
    iniset "$conf" ironic valid_interfaces "$IRONIC_MULTI_VALID_INTERFACES"
    # Nova's in-tree driver (VIRT_DRIVER=ironic) writes ids and a scope of
    # its own here: keystoneauth refuses a token request with two scopes.
    inidelete "$conf" ironic user_domain_id
    inidelete "$conf" ironic project_domain_id
    inidelete "$conf" ironic project_id
    if [[ "$IRONIC_MULTI_AUTH_SCOPE" == system ]]; then
        # DevStack's admin holds the system admin role (keystone-manage
        # bootstrap).
        username=${username:-admin}
        password=${password:-$ADMIN_PASSWORD}
        iniset "$conf" ironic system_scope all
        inidelete "$conf" ironic project_name
        inidelete "$conf" ironic project_domain_name
    else
        username=${username:-nova}
        password=${password:-$SERVICE_PASSWORD}
        inidelete "$conf" ironic system_scope
        iniset "$conf" ironic project_name "$IRONIC_MULTI_PROJECT_NAME"
        iniset "$conf" ironic project_domain_name \
            "$IRONIC_MULTI_PROJECT_DOMAIN_NAME"
    fi
    iniset "$conf" ironic username "$username"
    iniset "$conf" ironic password "$password"
}

# configure_ironic_multi - Write the driver's options and the
# configuration files of the extra computes
function configure_ironic_multi {
    local conf=$NOVA_CONF
    local i
    local extra_conf
    local host

    iniset "$conf" DEFAULT compute_driver ironic_multi.IronicMultiDriver

    iniset "$conf" ironic_multi coordination_url \
        "$(_ironic_multi_coordination_url)"
    iniset "$conf" ironic_multi coordination_group \
        "$IRONIC_MULTI_COORDINATION_GROUP"
    iniset "$conf" ironic_multi membership_timeout \
        "$IRONIC_MULTI_MEMBERSHIP_TIMEOUT"
    iniset "$conf" ironic_multi node_provider "$IRONIC_MULTI_NODE_PROVIDER"
    iniset "$conf" ironic_multi claim_timeout "$IRONIC_MULTI_CLAIM_TIMEOUT"

    _configure_ironic_multi_auth "$conf"

    if [[ "$IRONIC_MULTI_SHARD_COUNT" -gt 0 ]]; then
        iniset "$conf" ironic_multi fallback_shard_count \
            "$IRONIC_MULTI_SHARD_COUNT"
    fi

    # The scheduler reads $NOVA_CONF too.
    iniset "$conf" filter_scheduler enabled_filters \
        "$IRONIC_MULTI_SCHEDULER_FILTERS"
    # A few reschedules of one class would push a whole compute service
    # below the others for every flavor: the build failure weigher goes
    # off on the scheduler, and the computes report no build failures
    # (doc/source/nova-settings.rst).  n-cpu's copy is made after this.
    iniset "$conf" filter_scheduler build_failure_weight_multiplier 0
    iniset "$conf" compute consecutive_build_service_disable_threshold 0
    # A build whose messages were lost would stay in BUILD for good.
    iniset "$conf" DEFAULT instance_build_timeout \
        "$IRONIC_MULTI_INSTANCE_BUILD_TIMEOUT"
    # Every service weighs the same: without a shuffle the scheduler
    # sends a whole burst to the first of them.
    iniset "$conf" filter_scheduler shuffle_best_same_weighed_hosts True
    # [oslo_messaging_rabbit] rabbit_quorum_queue, which the docs also
    # ask for, is DevStack's: its broker serves every service
    # (devstack/README.rst, "Left to DevStack").

    # One small file per extra compute, anew at every stack.sh.
    for i in $(_ironic_multi_indexes_on_disk); do
        rm -f "$(_ironic_multi_conf "$i")"
    done
    for i in $(_ironic_multi_extra_indexes); do
        extra_conf=$(_ironic_multi_conf "$i")
        host=${IRONIC_MULTI_HOST_PREFIX}${i}
        iniset "$extra_conf" DEFAULT host "$host"
        # A state directory of its own, as for DevStack's fake computes.
        iniset "$extra_conf" DEFAULT state_path "$NOVA_STATE_PATH/$host"
        mkdir -p "$NOVA_STATE_PATH/$host"
    done
}

# enroll_ironic_multi_fake_nodes - Enroll IRONIC_MULTI_FAKE_NODES
# fake-hardware nodes and make them available
function enroll_ironic_multi_fake_nodes {
    local i
    local name
    local uuid
    local prop
    local -a props=()
    local -a baremetal=(openstack --os-cloud "$IRONIC_MULTI_OS_CLOUD"
        --os-region-name "$REGION_NAME" baremetal)

    for prop in $IRONIC_MULTI_FAKE_NODE_PROPERTIES; do
        props+=(--property "$prop")
    done
    for i in $(seq 1 "$IRONIC_MULTI_FAKE_NODES"); do
        name=ironic-multi-fake-$i
        uuid=$("${baremetal[@]}" node create --driver fake-hardware \
            --resource-class "$IRONIC_MULTI_RESOURCE_CLASS" \
            --name "$name" "${props[@]}" -f value -c uuid)
        die_if_not_set $LINENO uuid "Failed to create node $name"
        "${baremetal[@]}" node manage --wait 0 "$uuid"
        "${baremetal[@]}" node provide --wait 0 "$uuid"
        "${baremetal[@]}" node power off "$uuid"
    done
}

# assign_ironic_multi_shards - Give every unsharded Ironic node one of
# IRONIC_MULTI_SHARD_COUNT shard keys
function assign_ironic_multi_shards {
    "$NOVA_BIN_DIR/ironic-multi-manage" --config-file "$NOVA_CPU_CONF" \
        shards assign --count "$IRONIC_MULTI_SHARD_COUNT" --yes
}

# _ironic_multi_wait_for_compute <host> - Wait until the nova-compute
# service of <host> has registered with Nova
function _ironic_multi_wait_for_compute {
    local host=$1
    local deadline
    local id=""

    deadline=$((SECONDS + IRONIC_MULTI_COMPUTE_TIMEOUT))

    while [[ -z "$id" ]]; do
        if [[ $SECONDS -ge $deadline ]]; then
            die $LINENO "nova-compute of $host did not register within" \
                "${IRONIC_MULTI_COMPUTE_TIMEOUT}s"
        fi
        id=$(openstack --os-cloud devstack-admin \
            --os-region-name "$REGION_NAME" compute service list \
            --service nova-compute --host "$host" -f value -c ID) || id=""
        [[ -n "$id" ]] || sleep 1
    done
}

# start_ironic_multi_computes - Start the K-1 extra nova-compute services
function start_ironic_multi_computes {
    local i
    local -a hosts=()

    local cmd

    for i in $(_ironic_multi_extra_indexes); do
        cmd="$NOVA_BIN_DIR/nova-compute --config-file $NOVA_CPU_CONF"
        cmd+=" --config-file $(_ironic_multi_conf "$i")"
        run_process "n-cpu-im$i" "$cmd"
        hosts+=("${IRONIC_MULTI_HOST_PREFIX}${i}")
    done
    # stack.sh maps compute hosts into the cell right after this phase.
    if is_service_enabled n-api; then
        for i in "${hosts[@]}"; do
            _ironic_multi_wait_for_compute "$i"
        done
    fi
}

# stop_ironic_multi_computes - Stop the extra nova-compute services
function stop_ironic_multi_computes {
    local i
    for i in $(_ironic_multi_indexes_on_disk); do
        stop_process "n-cpu-im$i"
    done
}

# cleanup_ironic_multi - Remove the files of the extra computes and the
# coordination data kept on this host
function cleanup_ironic_multi {
    local i

    for i in $(_ironic_multi_indexes_on_disk); do
        rm -rf "${NOVA_STATE_PATH:?}/${IRONIC_MULTI_HOST_PREFIX}${i}"
        rm -f "$(_ironic_multi_conf "$i")"
    done
    # The group's data: in etcd, it goes with DevStack's own etcd3 cleanup
    # (unstack.sh); the plugin's file:// default lives in this directory.
    # A coordination URL set in local.conf is left alone.
    rm -rf "${IRONIC_MULTI_DATA_DIR:?}"
}


# Dispatcher
# ----------

if is_service_enabled ironic-multi; then
    _ironic_multi_check_settings
    if [[ "${1:-}" == "stack" && "${2:-}" == "install" ]]; then
        echo_summary "Installing ironic-multi"
        install_ironic_multi
    elif [[ "${1:-}" == "stack" && "${2:-}" == "post-config" ]]; then
        echo_summary "Configuring ironic-multi"
        configure_ironic_multi
    elif [[ "${1:-}" == "stack" && "${2:-}" == "extra" ]]; then
        if [[ "$IRONIC_MULTI_FAKE_NODES" -gt 0 ]]; then
            echo_summary "Enrolling $IRONIC_MULTI_FAKE_NODES fake nodes"
            enroll_ironic_multi_fake_nodes
        fi
        if [[ "$IRONIC_MULTI_NODE_PROVIDER" == ironic \
                && "$IRONIC_MULTI_SHARD_COUNT" -gt 0 ]]; then
            echo_summary "Assigning $IRONIC_MULTI_SHARD_COUNT shard keys"
            assign_ironic_multi_shards
        fi
        if is_service_enabled n-cpu; then
            echo_summary "Starting the extra ironic-multi computes"
            start_ironic_multi_computes
        fi
    elif [[ "${1:-}" == "stack" && "${2:-}" == "test-config" ]]; then
        # Nothing to configure for tempest.
        :
    elif [[ "${1:-}" == "unstack" ]]; then
        stop_ironic_multi_computes
    elif [[ "${1:-}" == "clean" ]]; then
        cleanup_ironic_multi
    fi
fi

# Restore xtrace
$_XTRACE_IRONIC_MULTI
