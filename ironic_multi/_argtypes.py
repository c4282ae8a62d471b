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

"""argparse types shared by the console scripts."""

import argparse


def at_least(minimum):
    """argparse type: a whole number of at least ``minimum``."""
    def parse(value):
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < minimum:
            raise argparse.ArgumentTypeError(
                'must be a whole number of at least %d, not %r'
                % (minimum, value))
        return number
    return parse


def positive_seconds(value):
    """argparse type: a number of seconds above 0."""
    try:
        number = float(value)
    except ValueError:
        number = 0
    if not number > 0:
        raise argparse.ArgumentTypeError(
            'must be a number of seconds above 0, not %r' % value)
    return number
