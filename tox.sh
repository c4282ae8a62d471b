#!/usr/bin/env bash
# Run tox on a fresh machine: installs tox (in .venv-tox) and the Debian
# packages the functional tests use when they are missing, then runs
# ``tox "$@"``.  ``./tox.sh`` runs the tests (the envlist, in parallel);
# ``./tox.sh -e sandbox`` runs the end-to-end sandbox.
set -euo pipefail
cd "$(dirname "$0")"

if command -v tox >/dev/null 2>&1; then
    TOX=tox
else
    if [ ! -x .venv-tox/bin/tox ]; then
        echo "tox.sh: installing tox into .venv-tox" >&2
        python3 -m venv .venv-tox
        .venv-tox/bin/pip install --quiet 'tox>=4.6' 'tox-uv>=1.11'
    fi
    TOX=.venv-tox/bin/tox
fi

# Debian packages the tests and the sandbox start servers from: etcd (a
# coordination backend), RabbitMQ and MariaDB (the multi-process cloud
# runs a broker and a database server of its own).
install_missing() {
    local command=$1 package=$2
    if command -v "$command" >/dev/null 2>&1 || [ -x "/usr/sbin/$command" ] ||
        ! command -v apt-get >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi
    echo "tox.sh: installing $package" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -q "$package" >/dev/null 2>&1 || {
        $SUDO apt-get update -q >/dev/null 2>&1 || true
        $SUDO apt-get install -y -q "$package" >/dev/null 2>&1 ||
            echo "tox.sh: $package could not be installed;" \
                 "the tests that need it will fail or be skipped" >&2
    }
}
install_missing etcd etcd-server
install_missing rabbitmq-server rabbitmq-server
install_missing mariadbd mariadb-server

# Without arguments, the tests: every environment of tox.ini's envlist at
# once, but the cloud tests after the functional ones (tox.ini says why);
# each env's output is printed as it ends.
if [ $# -eq 0 ]; then
    set -- run-parallel --parallel all --parallel-no-spinner
fi
exec "$TOX" "$@"
