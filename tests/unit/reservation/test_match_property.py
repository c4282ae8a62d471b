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

"""match() against a brute-force reference written from the rules.

Requests are generated as structured choices, rendered to a flavor and
image properties for Requirements.from_request, and evaluated directly on
the choices by reference_matches(), which shares no code with the module.
"""

import math
import string

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ironic_multi._reservation import filters
from ironic_multi._reservation.providers.ironic import states
from ironic_multi._reservation import requirements

READY = filters.ReadyFilter(states.why_not_ready)

# How operators spell, in Ironic, each class a request may ask for.
SPELLINGS = {None: ['baremetal', '', None],
             'CUSTOM_BAREMETAL': ['baremetal', 'BAREMETAL', 'bare-metal'],
             'CUSTOM_BAREMETAL_GOLD': ['baremetal-gold', 'BAREMETAL__GOLD',
                                       'baremetal.-gold'],
             'CUSTOM_GOLD': ['gold', 'Gold'],
             'CUSTOM_GOLD_FAST': ['Gold.Fast', 'gold_fast']}
NODE_CLASSES = sorted({c for names in SPELLINGS.values() for c in names
                       if c is not None}) + [None]
REQUEST_CLASSES = list(SPELLINGS)
TRAITS = ['HW_CPU_X86_AVX2', 'CUSTOM_RAID', 'CUSTOM_GPU', 'STORAGE_SSD']
CAP_KEYS = ['boot_mode', 'raid', 'disks', 'cpu_arch']
CAP_VALUES = ['uefi', 'bios', '1', '2', '10', '2.5', 'x86_64', 'aarch64',
              'avx,sse', 'nan']
PROJECTS = [None, '', 'p1', 'p2']
GROUPS = [None, '', 'rack1', 'Rack1', 'rack2']
NUMERIC_OPS = ['=', '==', '!=', '>=', '<=']
STRING_OPS = ['s==', 's!=', 's<', 's<=', 's>', 's>=', '<in>']
NUMBERS = ['0', '1', '2', '2.5', '10', '-1']
WORDS = CAP_VALUES[:-1] + ['avx', 'sse', 'x86']

sizes = st.one_of(st.integers(0, 300), st.integers(0, 300).map(str),
                  st.sampled_from(['junk', None, '1.5']))


def _capability_string(caps):
    return ','.join('%s:%s' % item for item in caps.items())


node_capabilities = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(CAP_KEYS[:-1]),
                    st.one_of(st.sampled_from(CAP_VALUES),
                              st.integers(0, 12))),
    st.dictionaries(st.sampled_from(CAP_KEYS[:-1]),
                    st.sampled_from(CAP_VALUES)).map(_capability_string),
    st.sampled_from(['raid:1:2,bad', ' raid :2,:x,boot_mode:']))

properties = st.fixed_dictionaries({}, optional={
    'memory_mb': sizes, 'cpus': sizes, 'local_gb': sizes,
    'cpu_arch': st.sampled_from(['x86_64', 'aarch64', None]),
    'capabilities': node_capabilities})

nodes = st.fixed_dictionaries({}, optional={
    'uuid': st.uuids().map(str),
    'resource_class': st.sampled_from(NODE_CLASSES),
    'properties': st.one_of(st.none(), properties),
    'traits': st.one_of(st.none(), st.lists(st.sampled_from(TRAITS),
                                            unique=True)),
    'instance_uuid': st.sampled_from([None, '', 'i1']),
    'allocation_uuid': st.sampled_from([None, 'a1']),
    'provision_state': st.sampled_from(['available', 'active', None]),
    'maintenance': st.sampled_from([False, True, None]),
    'power_state': st.sampled_from([None, 'power on', 'power off']),
    'owner': st.sampled_from(PROJECTS),
    'lessee': st.sampled_from(PROJECTS),
    'conductor_group': st.sampled_from(GROUPS),
    'shard': st.sampled_from([None, 's1']),
})


@st.composite
def expressions(draw):
    """(op, operands) of a well-formed expression; op None is equality."""
    kind = draw(st.sampled_from(['eq', 'num', 'str', 'or', 'all-in']))
    if kind == 'eq':
        return None, [draw(st.sampled_from(WORDS))]
    if kind == 'num':
        return (draw(st.sampled_from(NUMERIC_OPS)),
                [draw(st.sampled_from(NUMBERS))])
    if kind == 'str':
        return (draw(st.sampled_from(STRING_OPS)),
                [draw(st.sampled_from(WORDS))])
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    return ('<or>' if kind == 'or' else '<all-in>'), words


@st.composite
def requests(draw):
    """Structured request choices."""
    traits = draw(st.lists(st.sampled_from(TRAITS), unique=True))
    split = draw(st.integers(0, len(traits)))
    required = traits[:split]
    return {
        'flavor': {name: draw(st.integers(0, 200)) for name in
                   ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb')},
        'swap': draw(st.integers(0, 4096)),
        'resource_class': draw(st.sampled_from(REQUEST_CLASSES)),
        # 'flavor' (count from the flavor), 0 (not counted) or an amount.
        'standard': {name: draw(st.one_of(st.just('flavor'), st.just(0),
                                          st.integers(0, 300)))
                     for name in ('VCPU', 'MEMORY_MB', 'DISK_GB')},
        'required': required,
        'forbidden': traits[split:],
        'image_required': [t for t in required if draw(st.booleans())],
        'capabilities': draw(st.dictionaries(st.sampled_from(CAP_KEYS),
                                             expressions(), max_size=1)),
        'legacy': draw(st.dictionaries(st.sampled_from(CAP_KEYS),
                                       expressions(), max_size=1)),
        'project_id': draw(st.sampled_from(PROJECTS)),
    }


def render(req):
    """The request as Requirements.from_request arguments."""
    def text(op, operands):
        if op is None:
            return operands[0]
        if op == '<or>':
            return '<or> ' + ' <or> '.join(operands)
        return ' '.join([op] + operands)

    specs = {}
    if req['resource_class']:
        specs['resources:' + req['resource_class']] = '1'
    for name, amount in req['standard'].items():
        if amount != 'flavor':
            specs['resources:' + name] = str(amount)
    for name in req['required']:
        if name not in req['image_required']:
            specs['trait:' + name] = 'required'
    for name in req['forbidden']:
        specs['trait:' + name] = 'forbidden'
    for key, expression in req['capabilities'].items():
        specs['capabilities:' + key] = text(*expression)
    for key, expression in req['legacy'].items():
        specs[key] = text(*expression)
    flavor = dict(req['flavor'], swap=req['swap'], extra_specs=specs)
    image = {'traits_required': req['image_required']}
    return flavor, image, req['project_id']


def reference_matches(node, req, conductor_group):
    """Every rule, evaluated the plain way."""
    if node.get('provision_state') != 'available':
        return False
    if node.get('maintenance'):
        return False
    if node.get('instance_uuid') or node.get('allocation_uuid'):
        return False
    if node.get('power_state') is None:
        return False
    group = (node.get('conductor_group') or '').lower()
    if conductor_group is not None and group != conductor_group.lower():
        return False

    holders = [p for p in (node.get('owner'), node.get('lessee')) if p]
    if holders and req['project_id'] not in holders:
        return False

    if req['resource_class']:
        node_class = node.get('resource_class')
        if not node_class:
            return False
        # Runs of other characters than ASCII letters and digits become
        # one underscore.
        normalized, in_run = '', False
        for char in node_class:
            if char in string.ascii_letters + string.digits:
                normalized, in_run = normalized + char.upper(), False
            elif not in_run:
                normalized, in_run = normalized + '_', True
        if 'CUSTOM_' + normalized != req['resource_class']:
            return False

    props = node.get('properties') or {}

    def size(name):
        try:
            return int(props.get(name) or 0)
        except (TypeError, ValueError):
            return 0

    flavor = req['flavor']
    derived = {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['memory_mb'],
               'DISK_GB': (flavor['root_gb'] + flavor['ephemeral_gb']
                           + math.ceil(req['swap'] / 1024))}
    for name, prop in (('VCPU', 'cpus'), ('MEMORY_MB', 'memory_mb'),
                       ('DISK_GB', 'local_gb')):
        amount = req['standard'][name]
        wanted = derived[name] if amount == 'flavor' else amount
        if size(prop) < wanted:
            return False

    traits = node.get('traits') or []
    if any(t not in traits for t in req['required']):
        return False
    if any(t in traits for t in req['forbidden']):
        return False

    caps = {'cpu_arch': props.get('cpu_arch')}
    raw = props.get('capabilities')
    if isinstance(raw, dict):
        caps.update(raw)
    elif raw:
        for item in raw.split(','):
            if item.count(':') == 1:
                key, value = item.split(':')
                if key.strip() and value:
                    caps[key.strip()] = value

    def satisfied(value, op, operands):
        if value is None:
            return False
        value = str(value)
        if op is None:
            return value == operands[0]
        if op == '<or>':
            return value in operands
        if op == '<all-in>':
            return all(word in value for word in operands)
        if op == '<in>':
            return operands[0] in value
        if op in STRING_OPS:
            a, b = value, operands[0]
        else:
            try:
                a, b = float(value), float(operands[0])
            except ValueError:
                return False
            if math.isnan(a) or math.isinf(a):
                return False
        return {'=': a >= b, '==': a == b, '!=': a != b, '>=': a >= b,
                '<=': a <= b, 's==': a == b, 's!=': a != b, 's<': a < b,
                's<=': a <= b, 's>': a > b, 's>=': a >= b}[op]

    for key, (op, operands) in req['capabilities'].items():
        if not satisfied(caps.get(key), op, operands):
            return False
    for key, (op, operands) in req['legacy'].items():
        if key in caps and not satisfied(caps[key], op, operands):
            return False
    return True


@st.composite
def near_nodes(draw, req, conductor_group):
    """A node built to pass most rules of ``req``, then spoilt a bit.

    Independent random nodes almost never pass every rule; these make
    matches and near misses common.
    """
    project = req['project_id'] or None
    wanted = dict(req['legacy'], **req['capabilities'])
    big = st.one_of(st.just(1000), st.integers(0, 500))
    node = {
        'uuid': draw(st.uuids()).hex,
        'resource_class': draw(st.sampled_from(
            SPELLINGS[req['resource_class']])),
        'properties': {
            'memory_mb': draw(big), 'cpus': draw(big),
            'local_gb': draw(big),
            'cpu_arch': draw(st.sampled_from(['x86_64', 'aarch64'])),
            'capabilities': draw(st.one_of(
                st.fixed_dictionaries({
                    key: st.sampled_from(CAP_VALUES + operands)
                    for key, (op, operands) in wanted.items()
                    if key != 'cpu_arch'}),
                node_capabilities)),
        },
        'traits': req['required'] + [
            t for t in TRAITS if t not in req['required'] + req['forbidden']
            and draw(st.booleans())],
        'provision_state': 'available', 'maintenance': False,
        'instance_uuid': None, 'allocation_uuid': None,
        'power_state': 'power on',
        'owner': draw(st.sampled_from([None, project])),
        'lessee': draw(st.sampled_from([None, project])),
        'conductor_group': conductor_group or '',
    }
    spoilt = draw(nodes)
    for key in draw(st.lists(st.sampled_from(sorted(node)), max_size=2,
                             unique=True)):
        if key in spoilt:
            node[key] = spoilt[key]
        else:
            del node[key]
    return node


@st.composite
def scenarios(draw):
    req = draw(requests())
    conductor_group = draw(st.sampled_from(GROUPS))
    node_list = draw(st.lists(near_nodes(req, conductor_group),
                              max_size=5))
    node_list += draw(st.lists(nodes, max_size=2))
    return draw(st.permutations(node_list)), req, conductor_group


@settings(max_examples=500, deadline=None)
@given(scenario=scenarios())
def test_match_agrees_with_reference(scenario):
    node_list, req, conductor_group = scenario
    reqs = requirements.Requirements.from_request(*render(req))
    result = filters.match(node_list, reqs, (READY,) + (
        filters.matching_filters(conductor_group)))
    expected = [n for n in node_list
                if reference_matches(n, req, conductor_group)]
    assert [id(n) for n in result] == [id(n) for n in expected]


@settings(max_examples=100, deadline=None)
@given(node=nodes, req=requests())
def test_passes_is_reason_is_none(node, req):
    reqs = requirements.Requirements.from_request(*render(req))
    for node_filter in (READY,) + filters.MATCHING_FILTERS:
        assert node_filter.passes(node, reqs) is (
            node_filter.reason(node, reqs) is None)
