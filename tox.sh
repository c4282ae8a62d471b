#!/usr/bin/env bash
# Run tox on a fresh machine: installs tox (in .venv-tox) and the Debian
# packages the functional tests use when they are missing, then runs
# ``tox "$@"``.  ``./tox.sh`` runs the tests; ``./tox.sh -e sandbox`` runs
# the end-to-end sandbox.
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

# etcd is one of the coordination backends the functional tests exercise.
if ! command -v etcd >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1
then
    if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi
    echo "tox.sh: installing etcd-server" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -q etcd-server >/dev/null 2>&1 || {
        $SUDO apt-get update -q >/dev/null 2>&1 || true
        $SUDO apt-get install -y -q etcd-server >/dev/null 2>&1 ||
            echo "tox.sh: etcd-server could not be installed;" \
                 "etcd tests will be skipped" >&2
    }
fi

exec "$TOX" "$@"
