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

"""Options: registration, the sample generator's view, secrets."""

import logging

from oslo_config import cfg
import pytest

from ironic_multi._reservation import reserver as reserver_mod
from ironic_multi import conf as im_conf
from ironic_multi.conf import opts
from ironic_multi import exception
from ironic_multi.testing import reservers


def test_a_coordination_password_is_not_logged(caplog):
    # nova-compute logs every option when it starts.
    conf = reservers.make_conf(
        coordination_url='redis://:s3cret@redis.example.com:6379')
    caplog.set_level(logging.DEBUG)
    conf.log_opt_values(logging.getLogger('test'), logging.DEBUG)
    assert 'coordination_url' in caplog.text
    assert 's3cret' not in caplog.text


def test_every_group_is_registered_before_it_is_set():
    conf = cfg.ConfigOpts()
    im_conf.register_opts(conf)
    im_conf.register_opts(conf)  # idempotent
    conf.set_override('timeout', 5, group='ironic')
    conf.set_override('claim_timeout', 5, group='ironic_multi')
    conf([], default_config_files=[])
    assert conf.ironic.timeout == 5
    assert conf.ironic_multi.claim_timeout == 5


def test_overrides_stay_with_their_configuration():
    first = reservers.make_conf(claim_timeout=7)
    second = reservers.make_conf()
    assert first.ironic_multi.claim_timeout == 7
    assert second.ironic_multi.claim_timeout == 60


def test_list_opts_covers_every_registered_option():
    conf = cfg.ConfigOpts()
    im_conf.register_opts(conf)
    listed = {(group.name, opt.dest) for group, group_opts in opts.list_opts()
              for opt in group_opts}
    registered = {('ironic_multi', name) for name in conf.ironic_multi}
    assert registered <= listed
    assert ('ironic', 'timeout') in listed


def test_timeouts_that_contradict_each_other_are_refused():
    # A claim waiting its whole deploy_queue_timeout for a turn would be
    # released as stuck before it deploys.
    conf = reservers.make_conf(stuck_claim_timeout=1800,
                               deploy_queue_timeout=1800)
    with pytest.raises(exception.ConfigInvalid) as e:
        im_conf.check(conf)
    for option in ('stuck_claim_timeout', 'deploy_queue_timeout',
                   'claim_timeout'):
        assert option in str(e.value)
    im_conf.check(reservers.make_conf())
    with pytest.raises(exception.ConfigInvalid):
        reserver_mod.Reserver(conf, host='h')
