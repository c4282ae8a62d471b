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

"""The page of tempest's results: doc/source/tempest.rst, from results.json.

Every figure of the page comes from ``results.json`` (written by
:mod:`ironic_multi.testing.cloud.tempest`); the page is written anew,
never edited by hand::

    python -m ironic_multi.testing.cloud.tempest --publish \\
        tempest-results/results.json
"""

import collections
import re

STATUSES = ('success', 'skip', 'fail')
# A class skipped as a whole: subunit names it this way, once.
CLASS_SKIP = re.compile(r'^setUpClass \((?P<cls>[\w.]+)\)$')
# Where the compute API tests live, and how the tables name them.
PREFIXES = (('tempest.api.compute.', ''),
            ('tempest.serial_tests.api.compute.', 'serial: '))

HEADER = '''\
..
   Copyright 2026 The ironic-multi Authors

   Licensed under the Apache License, Version 2.0 (the "License"); you may
   not use this file except in compliance with the License. You may obtain
   a copy of the License at

        http://www.apache.org/licenses/LICENSE-2.0

   Unless required by applicable law or agreed to in writing, software
   distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
   WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
   License for the specific language governing permissions and limitations
   under the License.

.. This page is written by
   "python -m ironic_multi.testing.cloud.tempest --publish RESULTS.json"
   from the results of a run: do not edit it by hand.

======================================
Tempest's compute API tests
======================================

Tempest is the test suite every OpenStack cloud is judged by.
``./tox.sh -e tempest`` starts the multi-process cloud of :doc:`cloud`
(every service a process of its own, the computes loading
``ironic_multi.IronicMultiDriver``), writes a ``tempest.conf`` for it
and runs the tests of ``tempest.api.compute`` that apply to bare metal:
the regexes of ``tools/tempest/include.txt``, minus those of
``tools/tempest/exclude.txt``.  It writes ``tempest-results/``: the
results (``results.json``), this page (``results.rst``), tempest's
workspace with its ``tempest.conf`` and log, and every service's log.
'''


def module_of(test_id):
    """The test's module below ``tempest.api.compute``.

    ``tempest.api.compute.servers.test_servers.ServersTest.test_x`` and
    ``setUpClass (tempest.api.compute.servers.test_servers.ServersTest)``
    are both ``servers.test_servers``; the tests tempest runs one at a
    time (``tempest.serial_tests``) are ``serial: admin.test_x``.
    """
    match = CLASS_SKIP.match(test_id)
    dotted = match.group('cls') if match else test_id.split('[')[0]
    label = ''
    for prefix, label in PREFIXES:
        if dotted.startswith(prefix):
            dotted = dotted[len(prefix):]
            break
    else:
        label = ''
    module = []
    for part in dotted.split('.'):
        if part[:1].isupper():  # the class: the module ends before it
            break
        module.append(part)
    return label + ('.'.join(module) or dotted)


def expand_class_skips(results, listed):
    """Count a class skipped in ``setUpClass`` as each of its tests.

    ``listed``: the ids of every test the run selected (``tempest run
    --list-tests``).  A selected test with no result of its own whose
    class was skipped is a skip with the class's reason.
    """
    classes = {}
    own = []
    for result in results:
        match = CLASS_SKIP.match(result['test'])
        if match:
            classes[match.group('cls')] = result
        else:
            own.append(result)
    known = {r['test'] for r in own}
    expanded = list(own)
    for test in sorted(set(t.split('[')[0] for t in listed) - known):
        cls = test.rsplit('.', 1)[0]
        if cls in classes:
            expanded.append({'test': test, 'status': classes[cls]['status'],
                             'reason': classes[cls]['reason']})
            classes[cls]['expanded'] = True
    # A class whose tests were not listed stays as subunit named it.
    expanded += [r for r in classes.values() if not r.pop('expanded', None)]
    return sorted(expanded, key=lambda r: r['test'])


def modules_left_out(every, included):
    """The modules of test ids ``every`` with no test in ``included``."""
    return sorted(set(map(module_of, every)) - set(map(module_of, included)))


def counts(results):
    return collections.Counter(r['status'] for r in results)


def by_module(results):
    """``{module: Counter(status)}``."""
    groups = collections.defaultdict(collections.Counter)
    for result in results:
        groups[module_of(result['test'])][result['status']] += 1
    return groups


def table(results):
    """The rst table of passed, skipped and failed tests per module."""
    groups = by_module(results)
    rows = [(group,) + tuple(str(groups[group][s]) for s in STATUSES)
            for group in sorted(groups)]
    total = counts(results)
    rows.append(('**total**',) + tuple('**%d**' % total[s]
                                       for s in STATUSES))
    return rst_table(('Tests', 'Passed', 'Skipped', 'Failed'), rows)


# Why each of tempest's skip reasons holds here: a feature tempest.conf
# turns off (its reason is in the features' table), or why the cloud or
# tempest itself leaves the test out.  (regex on the reason, feature or
# None, text)
SKIP_CAUSES = (
    (r'Resize not available', 'resize', None),
    (r'Pause is not available', 'pause', None),
    (r'Shelve is not available', 'shelve', None),
    (r'Suspend is not available', 'suspend', None),
    (r'Stable rescue not available', 'stable_rescue', None),
    (r'Cold migration not available', 'cold_migration', None),
    (r'.*[Ss]napshotting', 'snapshot', None),
    (r'DiskConfig extension not enabled', 'disk_config', None),
    (r'Console output not supported', 'console_output', None),
    (r'FQDN hostname sanitization', 'hostname_fqdn_sanitization', None),
    (r'Change password not available', 'change_password', None),
    (r'VNC Console feature is disabled', 'vnc_console', None),
    (r'Instance validation tests are disabled', None,
     'they run commands inside the server; the cloud\'s guests let a '
     'test log in, no more, and only the modules run with validation on '
     'have them'),
    (r'Validation should be enabled', None,
     'they log into the server, and the cloud runs no guests (they take '
     'root)'),
    (r'Only owner network supports', None,
     'tempest attaches by fixed IP only on a network the project owns; '
     'its projects use the cloud\'s shared flat network (no L3 agent '
     'routes a project network here)'),
    (r'(Different|Same)HostFilter is not available', None,
     'the scheduler runs only the filters that make sense for one compute '
     'node standing for many Ironic nodes'),
    (r'Skipped until bug', None,
     'tempest skips it on every cloud until that bug is fixed'),
    (r'Ironic does not support hypervisor uptime', None,
     'tempest\'s own rule for Ironic\'s hypervisors'),
    (r'Neutron (allows|does not check)', None,
     'tempest\'s own rule for a cloud with Neutron'),
    (r'The public_network_id option must be specified', None,
     'the cloud has no public network: no router, no floating IPs'),
    (r'.*certified_image_ref', None, 'the cloud has no signed image'),
)


def skip_cause(reason, disabled_features):
    """Why a skip of ``reason`` holds here, or None when unknown."""
    for pattern, feature, text in SKIP_CAUSES:
        if re.match(pattern, reason):
            if feature is None:
                return text
            why = disabled_features.get(feature)
            return ('``%s`` off: %s' % (feature, why) if why else None)
    return None


def reasons(results, status):
    """``[(reason, [module, ...], count)]`` of one status, most first."""
    found = collections.defaultdict(list)
    for result in results:
        if result['status'] == status:
            reason = ' '.join((result['reason'] or '-').split())
            found[reason].append(module_of(result['test']))
    return sorted(((reason, sorted(set(modules)), len(modules))
                   for reason, modules in found.items()),
                  key=lambda item: (-item[2], item[0]))


def rst_table(header, rows):
    """A simple rst table (no cell may hold a line break)."""
    widths = [max(len(str(row[i])) for row in (header,) + tuple(rows))
              for i in range(len(header))]
    rule = '  '.join('=' * w for w in widths)

    def line(row):
        return '  '.join(str(c).ljust(w) for c, w in zip(row, widths)
                         ).rstrip()

    return [rule, line(header), rule] + [line(r) for r in rows] + [rule]


def _list_table(header, rows, widths):
    lines = ['.. list-table::', '   :header-rows: 1',
             '   :widths: %s' % ' '.join(str(w) for w in widths), '']
    for row in (header,) + tuple(rows):
        for index, cell in enumerate(row):
            lines.append('   %s %s' % ('* -' if index == 0 else '  -', cell))
    return lines


def _literal(text):
    return '``%s``' % text if text else '-'


def page(data):
    """The whole of doc/source/tempest.rst, from ``results.json``."""
    results = data['results']
    total = counts(results)
    minutes = data['seconds'] / 60.0
    lines = HEADER.splitlines() + [
        '', 'The last run', '------------', '',
        '* Command: ``%s``' % data['command'],
        '* Tempest %s, %d compute services, %d Ironic nodes (fake '
        'hardware), concurrency %d' % (
            data['tempest_version'], data['computes'], data['nodes'],
            data['concurrency']),
        '* %s: %d passed, %d skipped, %d failed in %.0f minutes (%d s: '
        'the cloud started in %d s, the tests ran in %d s) on a shared '
        'machine with 2 cores' % (
            data['date'], total['success'], total['skip'], total['fail'],
            minutes, data['seconds'], data['cloud_start_seconds'],
            data['tempest_seconds']),
        '* Ironic nodes still held by an instance after the run: %d' % len(
            data['held_nodes_after']),
        '', 'A class that tempest skips as a whole (in ``setUpClass``) '
        'counts as each of its tests.', '',
    ]
    lines += table(results)
    for status, title in (('fail', 'Failures'), ('skip', 'Skips')):
        found = reasons(results, status)
        lines += ['', title, '-' * len(title), '']
        if not found:
            lines += ['None.']
            continue
        if status == 'skip':
            lines += ['Tempest skips a test when ``tempest.conf`` says the '
                      'cloud lacks what it needs, or by rules of its own; '
                      'its reasons, by number of tests, and why each '
                      'holds here:', '']
        if status == 'fail':
            lines += _list_table(('Tests', 'Reason', 'Modules'), [
                (str(count), reason, ', '.join(modules))
                for reason, modules, count in found], (8, 52, 40))
            continue
        lines += _list_table(('Tests', 'Reason', 'Why here', 'Modules'), [
            (str(count), reason,
             skip_cause(reason, data['disabled_features']) or '-',
             ', '.join(modules))
            for reason, modules, count in found], (6, 30, 36, 28))
    lines += ['', 'What ``tempest.conf`` turns off', '-' * 31, '',
              '``[compute-feature-enabled]`` says the cloud lacks these; '
              'tempest skips their tests (see Skips):', '']
    lines += _list_table(('Feature', 'Why bare metal lacks it'), [
        (_literal(feature), reason)
        for feature, reason in sorted(data['disabled_features'].items())],
        (30, 70))
    lines += ['', '``[validation] run_validation = false``: no test logs '
              'into a server (the fake hardware boots nothing)%s.  '
              '``[compute-feature-enabled] scheduler_enabled_filters`` '
              'lists the filters the cloud\'s scheduler runs: %s.' % (
                  _validated(data.get('validated')),
                  ', '.join(data['scheduler_filters']))]
    lines += ['', 'Tests not run', '-------------', '',
              'Tests of ``include.txt`` that ``exclude.txt`` takes out '
              'again, because they cannot apply to bare metal and tempest '
              'has no flag to skip them:', '']
    lines += _list_table(('Regex', 'Why'), [
        (_literal(item['regex']), item['reason'])
        for item in data['excluded']], (40, 60))
    if data.get('not_included'):
        lines += ['', 'The modules of ``tempest.api.compute`` that '
                  '``include.txt`` leaves out: they attach volumes to '
                  'running servers, or need nova-network\'s floating '
                  'IPs, a console, live migration, Nova\'s disk config, '
                  'a router, or a login into the server: %s.' % ', '.join(
                      _literal(m) for m in data['not_included'])]
    return '\n'.join(lines) + '\n'


def _validated(regexes):
    """What the paragraph on validation says of the validated run."""
    if not regexes:
        return ''
    return (', but for the tests of %s: they log into each server they '
            'make, and run apart with validation on, against the cloud\'s '
            'fake guests (an SSH login on each deployed node\'s address, '
            'with the keys and addresses of its config drive: '
            '``ironic_multi/testing/cloud/guests.py``)' % ', '.join(
                _literal(r) for r in regexes))


def read_list(path):
    """``[{regex, reason}]`` of a tempest list file.

    A paragraph of comment lines right before regexes is their reason;
    a paragraph followed by a blank line is about the file.
    """
    items = []
    comment = []
    after_regex = False
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line:
                comment = []
            elif line.startswith('#'):
                if after_regex:
                    comment = []
                comment.append(line.lstrip('#').strip())
            else:
                items.append({'regex': line, 'reason': ' '.join(comment)})
            after_regex = bool(line) and not line.startswith('#')
    return items
