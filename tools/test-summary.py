#!/usr/bin/env python3
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

"""Sum the JUnit reports of every tox env into one closing line."""

import pathlib
import sys
import xml.etree.ElementTree as ET


def main(report_dir):
    totals = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
    for report in sorted(pathlib.Path(report_dir).glob('*.xml')):
        for suite in ET.parse(report).getroot().iter('testsuite'):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
    failed = totals['failures'] + totals['errors']
    passed = totals['tests'] - failed - totals['skipped']
    print('%d passed, %d failed, %d skipped'
          % (passed, failed, totals['skipped']))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.tox/reports'))
