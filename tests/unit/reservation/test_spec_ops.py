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

from hypothesis import assume
from hypothesis import given
from hypothesis import strategies as st
import pytest

from ironic_multi._reservation import _spec_ops
from ironic_multi import exception

try:
    from nova.scheduler.filters import extra_specs_ops as nova_ops
except ImportError:
    nova_ops = None


@pytest.mark.parametrize('text, value, expected', [
    ('= 4', '4', True),
    ('= 4', '8', True),
    ('= 4', '3.9', False),
    ('= 4', 'many', False),
    ('= 4', '4GB', False),
    ('= 4', 'nan', False),
    ('== 4', '4.0', True),
    ('== 4', '5', False),
    ('!= 4', '5', True),
    ('!= 4', '4', False),
    ('>= 2.5', '3', True),
    ('>= 2.5', '2', False),
    ('<= 4', '4', True),
    ('<= 4', '5', False),
    ('<= -1', -2, True),
    ('s== uefi', 'uefi', True),
    ('s== uefi', 'bios', False),
    ('s!= uefi', 'bios', True),
    ('s!= uefi', 'uefi', False),
    ('s< b', 'a', True),
    ('s< b', 'b', False),
    ('s<= b', 'b', True),
    ('s<= b', 'c', False),
    ('s> b', 'c', True),
    ('s> b', 'b', False),
    ('s>= b', 'b', True),
    ('s>= b', 'a', False),
    ('s== 10', 10, True),
    ('<in> avx', 'sse,avx2', True),
    ('<in> avx', 'sse', False),
    ('<all-in> avx sse', 'sse,avx2', True),
    ('<all-in> avx sse', 'avx', False),
    ('<or> a', 'a', True),
    ('<or> a <or> b', 'b', True),
    ('<or> a <or> b', 'ab', False),
    ('uefi', 'uefi', True),
    ('uefi', 'UEFI', False),
    ('True', True, True),
    ('a b', 'a b', True),
    (' a', 'a', False),
])
def test_matches(text, value, expected):
    assert _spec_ops.parse('k', text).matches(value) is expected


@pytest.mark.parametrize('text', ['uefi', '= 1', 's== a', '<or> a',
                                  '<all-in> a', '<in> a'])
def test_missing_value_never_matches(text):
    assert not _spec_ops.parse('k', text).matches(None)


def test_str_is_the_text():
    assert str(_spec_ops.parse('k', '<or> a <or> b')) == '<or> a <or> b'


@pytest.mark.parametrize('text', [
    '', '   ', None, 4,
    '=', '= abc', '>= abc', '<= 1 2', '== nan', '!= inf',
    's==', 's== a b', '<in>', '<in> a b',
    '<all-in>',
    '<or>', '<or> a b', '<or> a <or>', '<or> <or> a', '<or> a <or> <or>',
])
def test_malformed(text):
    with pytest.raises(exception.InvalidRequestSpec) as info:
        _spec_ops.parse('capabilities:k', text)
    assert info.value.key == 'capabilities:k'
    assert info.value.value == text


_WORDS = ['a', 'b', 'ab', '1', '2', '2.5', '10', '-1', '<or>', '<in>',
          '<all-in>', '=', '==', '!=', '>=', '<=', 's==', 's!=', 's<',
          's<=', 's>', 's>=']


@pytest.mark.skipif(nova_ops is None, reason='nova is not installed')
@given(words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5),
       value=st.sampled_from(['a', 'b', 'ab', 'a b', '1', '2', '2.5', '10',
                              '-1', '', '<or>']))
def test_agrees_with_nova(words, value):
    # Nova's own implementation is the oracle for well-formed expressions.
    text = ' '.join(words)
    try:
        expression = _spec_ops.parse('k', text)
    except exception.InvalidRequestSpec:
        assume(False)
    try:
        expected = nova_ops.match(value, text)
    except ValueError:
        # Nova raises on a non-numeric node value; here it fails to match.
        assert not expression.matches(value)
        return
    assert expression.matches(value) is expected
