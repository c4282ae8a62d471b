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

"""A copied nova.conf, and options out of range: read from real files."""

import nova.conf.ironic
import nova.conf.utils
from oslo_config import cfg
import pytest

from ironic_multi import conf as im_conf
from ironic_multi.conf import compat
from ironic_multi.conf import opts
from ironic_multi import exception


@pytest.fixture(params=['ironic-multi', 'nova'])
def load(request, tmp_path):
    """``load(text, host=None)``: a ConfigOpts read from a file, checked.

    Once with ironic-multi's ``[ironic]`` definitions alone (the operator
    CLI), once with Nova's registered first (inside nova-compute).
    """
    def load(text, host=None, check=True):
        path = tmp_path / 'nova.conf'
        path.write_text(text)
        conf = cfg.ConfigOpts()
        if request.param == 'nova':
            # nova.conf.ironic.register_opts() with a group object of
            # this ConfigOpts' own (see groups.ironic_multi).
            conf.register_group(cfg.OptGroup('ironic'))
            conf.register_opts(nova.conf.ironic.ironic_options, 'ironic')
            nova.conf.utils.register_ksa_opts(
                conf, 'ironic', nova.conf.ironic.DEFAULT_SERVICE_TYPE)
        im_conf.register_opts(conf)
        conf(['--config-file', str(path)], default_config_files=[])
        if check:
            im_conf.check(conf, host=host)
        return conf

    load.path = str(tmp_path / 'nova.conf')
    return load


def refused(load, text, host=None):
    with pytest.raises(exception.ConfigInvalid) as e:
        load(text, host=host)
    assert '\n' not in str(e.value)
    return e.value


class TestRanges:

    def test_the_option_and_its_bound_are_named(self, load):
        error = refused(load, '[ironic_multi]\nhousekeeping_interval = 5\n')
        assert str(error) == (
            'Invalid configuration: [ironic_multi] housekeeping_interval '
            'must be at least 10 (in %s)' % load.path)
        assert error.option == '[ironic_multi] housekeeping_interval'

    @pytest.mark.parametrize('opt', [
        opt for opt in im_conf.IRONIC_MULTI_OPTS
        if getattr(opt.type, 'min', None) is not None
        or getattr(opt.type, 'max', None) is not None],
        ids=lambda opt: opt.dest)
    def test_every_bounded_option_is_checked_at_start(self, load, opt):
        low, high = opt.type.min, opt.type.max
        if low is not None:
            error = refused(load, '[ironic_multi]\n%s = %s\n' % (
                opt.dest, low - 1))
            assert opt.dest in str(error)
            assert str(low) in str(error)
        if high is not None:
            error = refused(load, '[ironic_multi]\n%s = %s\n' % (
                opt.dest, high + 1))
            assert opt.dest in str(error)
            assert str(high) in str(error)

    def test_a_value_of_the_wrong_kind_says_what_is_wrong(self, load):
        error = refused(load, '[ironic_multi]\npreserve_scheme = shred\n')
        assert '[ironic_multi] preserve_scheme is invalid' in str(error)
        assert 'keep' in str(error)
        error = refused(load, '[ironic_multi]\nclaim_timeout = soon\n')
        assert '[ironic_multi] claim_timeout is invalid' in str(error)

    def test_in_tree_options_are_checked_too(self, load):
        error = refused(load, '[ironic]\nshard = two words\n')
        assert '[ironic] shard is invalid' in str(error)

    def test_spare_targets_must_be_counts(self, load):
        error = refused(load, '[ironic_multi]\nspare_targets = gold:many\n')
        assert error.option == '[ironic_multi] spare_targets'
        assert 'gold' in str(error) and "'many'" in str(error)
        conf = load('[ironic_multi]\nspare_targets = gold:4,silver:0\n')
        assert conf.ironic_multi.spare_targets == {'gold': '4',
                                                   'silver': '0'}

    def test_spare_targets_set_in_code_may_be_integers(self, load):
        # set_override() keeps the value's type: the check must not assume
        # the string a file gives.
        conf = load('', check=False)
        conf.set_override('spare_targets', {'gold': 10}, 'ironic_multi')
        im_conf.check(conf)
        conf.set_override('spare_targets', {'gold': -1}, 'ironic_multi')
        with pytest.raises(exception.ConfigInvalid):
            im_conf.check(conf)

    def test_defaults_pass(self, load):
        load('')


class TestConductorGroup:

    @pytest.mark.parametrize('name', ['conductor_group', 'partition_key'])
    def test_is_honoured(self, load, name):
        conf = load('[ironic]\n%s = Rack-1\n' % name)
        assert conf.ironic_multi.conductor_group == 'Rack-1'
        assert compat.serves(conf) == {'conductor_group': 'rack-1',
                                       'shard': None}

    def test_the_empty_group_is_a_group(self, load):
        # In-tree, "" is the default conductor group, not "every group".
        conf = load('[ironic]\nconductor_group =\n')
        assert conf.ironic_multi.conductor_group == ''

    def test_both_set_alike_is_fine(self, load):
        conf = load('[ironic]\nconductor_group = rack-1\n'
                    '[ironic_multi]\nconductor_group = RACK-1\n')
        assert conf.ironic_multi.conductor_group == 'RACK-1'

    def test_both_set_differently_is_refused(self, load):
        error = refused(load, '[ironic]\nconductor_group = rack-1\n'
                              '[ironic_multi]\nconductor_group = rack-2\n')
        assert str(error) == (
            "Invalid configuration: [ironic] conductor_group ('rack-1') and "
            "[ironic_multi] conductor_group ('rack-2') disagree: set one of "
            "them, they mean the same here")

    def test_unset_leaves_every_group(self, load):
        conf = load('')
        assert conf.ironic_multi.conductor_group is None

    def test_a_default_given_before_goes_with_the_option(self, load):
        # Nova's tests and ours change options between two checks.
        conf = load('[ironic]\nconductor_group = rack-1\n')
        conf.set_override('conductor_group', None, group='ironic')
        im_conf.check(conf)
        assert conf.ironic_multi.conductor_group is None


class TestShard:

    def test_limits_the_group_to_its_key(self, load):
        conf = load('[ironic]\nshard = s1\n')
        assert compat.shard_scope(conf) == {'s1'}
        assert compat.serves(conf) == {'conductor_group': None,
                                       'shard': 's1'}

    def test_unset_is_every_key(self, load):
        assert compat.shard_scope(load('')) is None


class TestRetryOptions:
    """In-tree: how often and how long Nova reads a node it waits for."""

    def test_api_retry_interval_is_the_poll_interval(self, load):
        conf = load('[ironic]\napi_retry_interval = 5\n')
        assert conf.ironic_multi.state_poll_interval == 5.0

    def test_api_max_retries_bounds_the_tear_down(self, load):
        conf = load('[ironic]\napi_max_retries = 300\n')
        # Nova's destroy: 301 reads, 2 s apart.
        assert conf.ironic_multi.unprovision_timeout == 602
        conf = load('[ironic]\napi_max_retries = 9\napi_retry_interval = 3\n')
        assert conf.ironic_multi.unprovision_timeout == 30
        assert conf.ironic_multi.state_poll_interval == 3.0

    def test_unset_they_change_nothing(self, load):
        conf = load('')
        assert conf.ironic_multi.state_poll_interval == 2.0
        assert conf.ironic_multi.unprovision_timeout == 3600

    def test_both_set_alike_is_fine(self, load):
        conf = load('[ironic]\napi_retry_interval = 1\napi_max_retries = 9\n'
                    '[ironic_multi]\nstate_poll_interval = 1.0\n'
                    'unprovision_timeout = 10\n')
        assert conf.ironic_multi.unprovision_timeout == 10

    @pytest.mark.parametrize('text, names', [
        ('[ironic]\napi_retry_interval = 1\n'
         '[ironic_multi]\nstate_poll_interval = 0.5\n',
         ('[ironic] api_retry_interval (1)',
          '[ironic_multi] state_poll_interval (0.5)')),
        ('[ironic]\napi_max_retries = 300\n'
         '[ironic_multi]\nunprovision_timeout = 3600\n',
         ('[ironic] api_max_retries (300)',
          '[ironic_multi] unprovision_timeout (3600)')),
    ])
    def test_both_set_differently_is_refused(self, load, text, names):
        error = refused(load, text)
        for name in names:
            assert name in str(error)

    def test_a_busy_poll_is_refused(self, load):
        error = refused(load, '[ironic]\napi_retry_interval = 0\n')
        assert str(error) == (
            'Invalid configuration: [ironic] api_retry_interval (0) gives '
            '[ironic_multi] state_poll_interval the value 0.0, which is '
            'invalid: should be greater than or equal to 0.01')


class TestRefused:

    @pytest.mark.parametrize('name, value', [
        ('retriable_status_codes', '503'),
    ])
    def test_set_is_refused_even_at_its_default(self, load, name, value):
        error = refused(load, '[ironic]\n%s = %s\n' % (name, value))
        assert error.option == '[ironic] %s' % name
        assert str(error).startswith(
            'Invalid configuration: [ironic] %s is set, but ironic-multi '
            % name)
        assert str(error).endswith('remove it')

    def test_unset_they_are_fine(self, load):
        load('')


class TestPeerList:

    def test_must_name_this_host_as_in_tree(self, load):
        text = ('[ironic]\nconductor_group = rack-1\n'
                'peer_list = compute1,compute2\n')
        load(text, host='compute1')
        error = refused(load, text, host='compute3')
        assert error.option == '[ironic] peer_list'
        assert 'compute3' in str(error)
        assert compat.peers(load(text)) == {'compute1', 'compute2'}

    @pytest.mark.parametrize('text', [
        # In-tree reads it only with a conductor group and no shard.
        '[ironic]\npeer_list = compute1\n',
        '[ironic]\npeer_list = c1\n[ironic_multi]\nconductor_group = r\n',
        '[ironic]\nconductor_group = r\nshard = s\npeer_list = compute1\n',
    ])
    def test_not_read_where_in_tree_does_not_read_it(self, load, text):
        conf = load(text, host='compute3')
        assert compat.peers(conf) is None


def test_the_in_tree_options_are_listed_for_the_reference():
    listed = {(group.name, opt.dest) for group, group_opts in opts.list_opts()
              for opt in group_opts}
    for name in ('conductor_group', 'shard', 'peer_list', 'api_max_retries',
                 'api_retry_interval', 'serial_console_state_timeout',
                 'vnc_console_state_timeout'):
        assert ('ironic', name) in listed
