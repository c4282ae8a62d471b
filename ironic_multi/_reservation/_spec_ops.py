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

"""Capability expressions, with the operators of Nova's extra specs.

An expression is the value of a ``capabilities:KEY`` extra spec. Its first
word may be an operator::

    =  == != >= <=               numbers ("=" means "at least")
    s== s!= s< s<= s> s>=         strings
    <in> WORD                     WORD is a substring of the value
    <all-in> W1 W2 ...            every word is a substring
    <or> V1 <or> V2 ...           the value is one of V1, V2, ...

Any other expression is compared for string equality, as a whole.

Nova checks nothing until a host is tested, and then uses the first operand
and ignores the rest. Here an expression is checked once, when it is
parsed: a missing or extra operand, a non-numeric operand of a numeric
operator or a broken ``<or>`` list is an InvalidRequestSpec, never a
silent "no node matches".
"""

import dataclasses
import math
import operator

from ironic_multi import exception

OR = '<or>'
ALL_IN = '<all-in>'

_NUMERIC = {
    '=': operator.ge,
    '==': operator.eq,
    '!=': operator.ne,
    '>=': operator.ge,
    '<=': operator.le,
}

_STRING = {
    's==': operator.eq,
    's!=': operator.ne,
    's<': operator.lt,
    's<=': operator.le,
    's>': operator.gt,
    's>=': operator.ge,
    '<in>': lambda value, word: word in value,
}


def _number(text):
    number = float(text)
    # NaN compares false to everything and inf is no capability value.
    if not math.isfinite(number):
        raise ValueError(text)
    return number


@dataclasses.dataclass(frozen=True)
class Expression:
    """One parsed capability expression.

    ``op`` is None for plain string equality with ``text``. ``operands``
    holds a float for numeric operators and strings otherwise.
    """

    text: str
    op: str | None = None
    operands: tuple = ()

    def __str__(self):
        return self.text

    def matches(self, value):
        """Whether a node's capability value satisfies the expression.

        ``value`` is None when the node lacks the capability, which never
        matches. Values are compared as strings, as Nova does.
        """
        if value is None:
            return False
        value = str(value)
        if self.op is None:
            return value == self.text
        if self.op == OR:
            return value in self.operands
        if self.op == ALL_IN:
            return all(word in value for word in self.operands)
        if self.op in _NUMERIC:
            try:
                number = _number(value)
            except ValueError:
                # A node value that is no number fails, it is not an error.
                return False
            return _NUMERIC[self.op](number, self.operands[0])
        return _STRING[self.op](value, self.operands[0])


def parse(key, text):
    """Parse the expression ``text`` of the extra spec ``key``.

    :raises: InvalidRequestSpec naming ``key`` and ``text``.
    """
    def invalid(reason):
        return exception.InvalidRequestSpec(key=key, value=text,
                                            reason=reason)

    if not isinstance(text, str) or not text.strip():
        raise invalid('an expression must be a non-empty string')
    op, *operands = text.split()
    if op == OR:
        values, separators = operands[::2], operands[1::2]
        if (not values or len(values) != len(separators) + 1
                or OR in values or any(s != OR for s in separators)):
            raise invalid('expected "<or> A <or> B ..."')
        return Expression(text, op, tuple(values))
    if op == ALL_IN:
        if not operands:
            raise invalid('<all-in> needs at least one word')
        return Expression(text, op, tuple(operands))
    if op not in _NUMERIC and op not in _STRING:
        return Expression(text)
    if len(operands) != 1:
        raise invalid('%s needs exactly one operand' % op)
    if op in _STRING:
        return Expression(text, op, tuple(operands))
    try:
        return Expression(text, op, (_number(operands[0]),))
    except ValueError:
        raise invalid('%s needs a number' % op)
