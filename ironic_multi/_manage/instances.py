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

"""``instances adopt``: a live service takes over a lost host's instances.
"""

from ironic_multi._manage import base


def _cell(value):
    if isinstance(value, list):
        return base.Listing(value)
    if isinstance(value, dict):
        return base.Counters(value)
    return base.Maybe(value)


class InstancesAdopt(base.ShowOne):
    """Have a live service adopt the instances of another compute host.

    The adopting service moves each instance of the lost host to itself
    (the node's host mark, Nova's instance host and node, the placement
    allocation), so the servers stay manageable.  Without --to, the
    service that owns the lost host on the ring adopts.  Shows the
    answering service and what it adopted.
    """

    #: The services' request.
    OP = 'adopt'
    FROM_HELP = ('The compute service host whose instances to adopt (the '
                 'one that is down).')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--from', dest='source', required=True, metavar='HOST',
            help=self.FROM_HELP)
        parser.add_argument(
            '--to', dest='target', metavar='HOST',
            help='The live compute service host that adopts them (default: '
                 'the one the services choose).')
        base.add_timeout(parser)
        return parser

    def take_action(self, parsed_args):
        source, target = parsed_args.source, parsed_args.target
        hosts = self.sources.live_hosts()
        if target is not None and target not in hosts:
            raise base.ManageError('%s is not a live compute service (live: '
                                   '%s)' % (target, ', '.join(hosts)))
        if target is not None and target == source:
            raise base.ManageError('A host cannot adopt its own instances')
        timeout = self.sources.timeout(parsed_args)
        answers = self.sources.ask(
            self.OP, {'from': source}, host=target,
            expected=None if target is None else [target], timeout=timeout)
        if not answers:
            raise base.ManageError('No live service answered within %s s'
                                   % timeout)
        host, answer = sorted(answers.items())[0]
        if 'error' in answer:
            raise base.ManageError('%s could not adopt the instances of %s: '
                                   '%s' % (host, source, answer['error']))
        fields = {'Host': host, 'From': source}
        for key, value in sorted((answer.get('result') or {}).items()):
            fields[key.replace('_', ' ').title()] = value
        names = tuple(fields)
        return names, tuple(_cell(fields[name]) for name in names)
