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

"""A thin layer over python-ironicclient.

Every call goes through :meth:`IronicAPI._request`, which sends the
negotiated microversion explicitly, bounds every request with a timeout
(``[ironic] timeout``, cut to the caller's deadline), retries only what is
safe to retry (HTTP 503 and connection failures of idempotent requests, at
a fixed pace, within the deadline: keystoneauth's ``[ironic]
status_code_retries`` and ``connect_retries``, as Nova's in-tree driver),
never retries a 409, and maps errors to :mod:`ironic_multi.exception`.
Results are plain dicts, as Ironic's JSON.

ironicclient logs an ERROR for every 409 and 503 it raises ("Error
contacting Ironic server: ... Attempt 1 of 1"), claim races included.  The
errors of this layer's requests are handled here and logged by this
layer or its callers at the level they deserve (a claim race is none): a
filter on ironicclient's logger demotes its record of them to DEBUG.
"""

import contextlib
import datetime
import email.utils
import itertools
import logging as py_logging
import threading
import time
import urllib.parse

from ironicclient.common.apiclient import exceptions as ic_exc
from ironicclient.v1 import client as ic_client
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from ironic_multi._reservation.providers.ironic import ownership
from ironic_multi._reservation.providers.ironic import versions
from ironic_multi import exception

LOG = logging.getLogger(__name__)

# Ironic's default [api]max_limit; asking for more silently gets less.
PAGE_SIZE = 1000
# Seconds one request may take when ``[ironic] timeout`` is unset: no
# request waits without a bound.
DEFAULT_TIMEOUT = 60.0
# Retries of a request Ironic did not answer, and seconds between them,
# when ``[ironic] connect_retries``/``status_code_retries`` (and their
# ``*_retry_delay``) are unset: about two minutes of an Ironic restarting.
DEFAULT_RETRIES = 60
DEFAULT_RETRY_DELAY = 2.0
#: ``{answered: (retries option, delay option)}`` in ``[ironic]``.
RETRY_OPTIONS = {True: ('status_code_retries', 'status_code_retry_delay'),
                 False: ('connect_retries', 'connect_retry_delay')}
_VERSION_HEADER = 'X-OpenStack-Ironic-API-Version'

# The request never reached Ironic, or Ironic asked us to come back later:
# repeating it cannot apply a change twice.
_NOT_APPLIED = (ic_exc.ServiceUnavailable, ic_exc.ConnectionRefused)
# Keystone's HTTP errors while the session gets a token: the request to
# Ironic never left (ironicclient asks its session not to raise for
# Ironic's own answers, so only the auth plugin raises these).
_NO_TOKEN = ks_exc.HttpError
# The request may have reached Ironic; only idempotent ones are repeated.
_LOST = (ks_exc.ConnectionError, ic_exc.ConnectionError)

# ironicclient's logger, and its record of an error it raises.
_CLIENT_LOGGER = 'ironicclient.common.http'
_CLIENT_ERROR = 'Error contacting Ironic server'
# Whether this thread is in one of IronicAPI's requests.
_requests = threading.local()


class _HandledHere(py_logging.Filter):
    """Demote ironicclient's record of an error this layer handles.

    Only in IronicAPI's requests: another user of ironicclient in the
    process keeps its records.  A demoted record reaches the handlers
    only if the client's logger is enabled for DEBUG.
    """

    def filter(self, record):
        if not (getattr(_requests, 'inside', False)
                and record.levelno > py_logging.DEBUG
                and record.getMessage().startswith(_CLIENT_ERROR)):
            return True
        record.levelno, record.levelname = py_logging.DEBUG, 'DEBUG'
        return py_logging.getLogger(record.name).isEnabledFor(
            py_logging.DEBUG)


def _install_filter():
    logger = py_logging.getLogger(_CLIENT_LOGGER)
    if not any(isinstance(f, _HandledHere) for f in logger.filters):
        logger.addFilter(_HandledHere())


_install_filter()


@contextlib.contextmanager
def _handled_here():
    """Mark this thread's ironicclient calls as IronicAPI's own."""
    outer = getattr(_requests, 'inside', False)
    _requests.inside = True
    try:
        yield
    finally:
        _requests.inside = outer


def retry_policy(conf, answered):
    """``(retries, delay)`` of a request that Ironic did not serve.

    keystoneauth's ``[ironic]`` options, which Nova's in-tree driver uses
    the same way (through openstacksdk): ``status_code_retries`` when
    Ironic answered to come back later (503), ``connect_retries`` when
    the request got no answer.

    :param answered: whether Ironic (or Keystone) answered.
    """
    count_option, delay_option = RETRY_OPTIONS[answered]
    count, delay = conf.ironic[count_option], conf.ironic[delay_option]
    return (DEFAULT_RETRIES if count is None else count,
            DEFAULT_RETRY_DELAY if delay is None else delay)


def _session_from_conf(conf):
    group = 'ironic'
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    return ks_loading.load_session_from_conf_options(conf, group, auth=auth)


class IronicAPI(object):
    """Access to one Ironic, with the microversion negotiated once."""

    def __init__(self, conf, session=None, endpoint=None):
        self._conf = conf
        group = conf.ironic
        self._session = session or _session_from_conf(conf)
        self._client = ic_client.Client(
            endpoint_override=endpoint or group.endpoint_override,
            session=self._session,
            # Only our own explicit header is ever sent (see _request), so
            # the client must neither negotiate nor retry on its own.
            os_ironic_api_version=versions.format(versions.MINIMUM),
            max_retries=0,
            # The catalog entry, as Nova's in-tree driver finds it: the
            # first of valid_interfaces that the catalog has.
            service_type=group.service_type or 'baremetal',
            service_name=group.service_name,
            region_name=group.region_name,
            interface=group.valid_interfaces or ['public'])
        self._http = self._client.http_client
        self._version = None
        self._local = threading.local()

    # -- versions ---------------------------------------------------------

    @property
    def version(self):
        """The microversion used for every request, negotiated lazily."""
        if self._version is None:
            self._version = self._negotiate()
        return self._version

    def _negotiate(self):
        root = self._request('GET', '/', version=versions.MINIMUM)
        server = root.get('default_version') or root['versions'][0]
        server_max = versions.parse(server['version'])
        if server_max < versions.MINIMUM:
            raise exception.IronicVersionUnsupported(
                server_max=server['version'],
                required=versions.format(versions.MINIMUM),
                feature='ironic-multi')
        chosen = min(server_max, versions.MAXIMUM)
        missing = sorted(name for name, needed in versions.FEATURES.items()
                         if needed > chosen)
        if missing:
            LOG.warning('Ironic API %s lacks %s; falling back to what it '
                        'supports', server['version'], ', '.join(missing))
        LOG.info('Using Ironic API microversion %s (server maximum %s)',
                 versions.format(chosen), server['version'])
        return chosen

    def supports(self, feature):
        return self.version >= versions.FEATURES[feature]

    def server_time(self):
        """Ironic's clock when this call started, at the latest.

        A naive UTC datetime: the ``Date`` header of the answer to ``GET
        /`` (whole seconds, written as the answer left) less the time the
        request took; this host's clock when the answer has no ``Date``.
        """
        asked, started = time.time(), time.monotonic()
        headers, _root = self._request('GET', '/', version=versions.MINIMUM,
                                       with_headers=True)
        took = datetime.timedelta(seconds=time.monotonic() - started)
        try:
            answered = email.utils.parsedate_to_datetime(headers['Date'])
        except (KeyError, TypeError, ValueError):
            LOG.debug('Ironic\'s answer has no valid Date header: using '
                      'this host\'s clock')
            return datetime.datetime.fromtimestamp(
                asked, datetime.timezone.utc).replace(tzinfo=None)
        if answered.tzinfo is not None:
            answered = answered.astimezone(datetime.timezone.utc)
        return answered.replace(tzinfo=None) - took

    def token_scope(self):
        """``'system'``, ``'project'``, or None (no token: noauth).

        :raises IronicUnavailable: Keystone did not answer.
        """
        auth = self._session.auth
        if auth is None or not hasattr(auth, 'get_access'):
            return None
        try:
            access = auth.get_access(self._session)
        except ks_exc.ClientException as e:
            raise exception.IronicUnavailable(
                reason='cannot authenticate to Keystone: %s' % e)
        if getattr(access, 'system_scoped', False):
            return 'system'
        return 'project' if access.project_id else None

    @contextlib.contextmanager
    def bounded(self, deadline):
        """Let no request of this thread retry past ``deadline``.

        ``deadline`` is a ``time.monotonic()`` value; an explicit deadline
        of a call still applies.
        """
        outer = getattr(self._local, 'deadline', None)
        self._local.deadline = deadline
        try:
            yield
        finally:
            self._local.deadline = outer

    # -- the one request path ---------------------------------------------

    def _request(self, method, url, body=None, idempotent=True,
                 deadline=None, version=None, with_headers=False):
        """Send one request; return the decoded JSON body (or None).

        :param idempotent: whether a request whose answer was lost may be
            sent again.  A lost non-idempotent one raises
            RequestOutcomeUnknown for the caller to settle.
        :param deadline: ``time.monotonic()`` value past which no request
            waits and no retry starts.
        :param with_headers: return ``(headers, body)`` instead.
        """
        if deadline is None:
            deadline = getattr(self._local, 'deadline', None)
        headers = {_VERSION_HEADER: versions.format(version or self.version)}
        kwargs = {'headers': headers}
        if body is not None:
            kwargs['body'] = body
        attempt = 0
        while True:
            attempt += 1
            kwargs['timeout'] = self._timeout(method, url, deadline)
            try:
                with _handled_here():
                    resp, data = self._http.json_request(method, url,
                                                         **kwargs)
                if with_headers:
                    return resp.headers, data or None
                return data or None
            except ic_exc.HttpError as e:
                if not isinstance(e, _NOT_APPLIED):
                    raise _api_error(e, method, url)
                error, answered = e, isinstance(e, ic_exc.ServiceUnavailable)
            except _NO_TOKEN as e:
                if (e.http_status or 0) < 500:
                    raise exception.IronicUnavailable(
                        reason='cannot authenticate to Keystone for %s %s: '
                               '%s' % (method, url, e))
                error, answered = 'Keystone: %s' % e, True
            except _NOT_APPLIED + _LOST as e:
                if not (idempotent or isinstance(e, _NOT_APPLIED)):
                    raise exception.RequestOutcomeUnknown(
                        method=method, url=url, reason=e)
                error, answered = e, isinstance(e, ic_exc.ServiceUnavailable)
            retries, delay = retry_policy(self._conf, answered)
            if (attempt > retries
                    or (deadline is not None
                        and time.monotonic() + delay > deadline)):
                raise exception.IronicUnavailable(
                    reason='%s %s failed after %d attempt(s): %s'
                    % (method, url, attempt, error))
            LOG.warning('Ironic is unavailable (%(error)s); retrying '
                        '%(method)s %(url)s in %(delay).1f s',
                        {'error': error, 'method': method, 'url': url,
                         'delay': delay})
            time.sleep(delay)

    def _timeout(self, method, url, deadline):
        """Seconds this request may take: the option, cut to the deadline.

        :raises IronicUnavailable: the deadline has passed.
        """
        timeout = self._conf.ironic.timeout or DEFAULT_TIMEOUT
        if deadline is None:
            return timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise exception.IronicUnavailable(
                reason='no time left for %s %s' % (method, url))
        return min(timeout, left)

    # -- nodes --------------------------------------------------------------

    def list_nodes(self, fields=None, detail=False, page_size=PAGE_SIZE,
                   **filters):
        """List nodes, paging with a marker and the same filters each time.

        Ironic's ``next`` links drop the filters, so they are never
        followed; each page is a request bounded by the thread's deadline.
        ``filters`` are query parameters of ``GET /v1/nodes`` (``shard``
        may be a list).
        """
        return list(self.iter_nodes(fields=fields, detail=detail,
                                    page_size=page_size, **filters))

    def iter_nodes(self, fields=None, detail=False, page_size=PAGE_SIZE,
                   grow_to=None, **filters):
        """Like :meth:`list_nodes`, lazily.

        :param grow_to: double the page size after each page, up to this:
            a reader that usually stops on the first page keeps it small,
            one that must go on needs few requests.
        """
        return itertools.chain.from_iterable(self.iter_node_pages(
            fields=fields, detail=detail, page_size=page_size,
            grow_to=grow_to, **filters))

    def iter_node_pages(self, fields=None, detail=False, page_size=PAGE_SIZE,
                        grow_to=None, marker=None, **filters):
        """The pages of a node listing, lazily, each a list of nodes.

        :param marker: the UUID of the node to list after.  Every page
            after the first is listed after the last node of the one
            before.
        """
        path = '/v1/nodes/detail' if detail else '/v1/nodes'
        return self._pages(path, 'nodes', fields, page_size, filters,
                           grow_to=grow_to, marker=marker)

    def _iter(self, path, key, fields, page_size, filters):
        """Every item of a listing, page by page, lazily."""
        return itertools.chain.from_iterable(
            self._pages(path, key, fields, page_size, filters))

    def _pages(self, path, key, fields, page_size, filters, grow_to=None,
               marker=None):
        query = {name: _query_value(value) for name, value in filters.items()
                 if value is not None}
        if fields:
            # The marker is a UUID: without it in the page we cannot page.
            query['fields'] = ','.join(sorted(set(fields) | {'uuid'}))
        query['limit'] = page_size
        while True:
            if marker:
                query['marker'] = marker
            answer = self._request('GET', '%s?%s' % (
                path, urllib.parse.urlencode(query)))
            page = answer[key]
            yield page
            # Ironic may give fewer than asked ([api]max_limit): only the
            # absence of its ``next`` link says that there is no more.
            if not page or not answer.get('next'):
                return
            marker = page[-1]['uuid']
            if grow_to:
                query['limit'] = min(grow_to, query['limit'] * 2)

    def get_node(self, node, fields=None):
        url = '/v1/nodes/%s' % node
        if fields:
            url += '?fields=' + ','.join(fields)
        try:
            return self._request('GET', url)
        except exception.IronicAPIError as e:
            if e.status_code == 404:
                raise exception.NodeNotFound(node=node)
            raise

    def node_by_instance(self, instance_uuid, fields=None):
        """The node associated with ``instance_uuid``, or None."""
        nodes = self.list_nodes(fields=fields, instance_uuid=instance_uuid)
        return nodes[0] if nodes else None

    def patch_node(self, node, patch, idempotent=True, deadline=None):
        with _node_errors(node):
            return self._request('PATCH', '/v1/nodes/%s' % node, body=patch,
                                 idempotent=idempotent, deadline=deadline)

    def claim_node(self, node, instance_uuid, mark, deadline=None,
                   also=()):
        """Set ``instance_uuid`` and its ownership ``mark`` on ``node``.

        Ironic's atomic claim: both or neither are written
        (:mod:`.ownership`).

        :param also: more JSON patch operations for the same write (the
            deploy's ``instance_info``): written with the claim or not at
            all.

        :raises InstanceAlreadyClaimed: the instance holds a node already
            (perhaps this one).
        :raises NodeAlreadyClaimed: another instance holds the node.
        :raises RequestOutcomeUnknown: the answer was lost; read back.
        """
        patch = ownership.claim_patch(instance_uuid, mark) + list(also)
        try:
            return self.patch_node(node, patch, idempotent=False,
                                   deadline=deadline)
        except exception.NodeConflict as e:
            # Ironic names the instance that holds the node ("Node X is
            # associated with instance A") or the one that holds another
            # node ("Instance A is already associated with a node"); its
            # API has no structured code for either, so the message is read
            # here, once, and never by callers.
            error = (exception.InstanceAlreadyClaimed
                     if instance_uuid in str(e.reason)
                     else exception.NodeAlreadyClaimed)
            raise error(node=node, instance=instance_uuid, reason=e.reason)

    def set_provision_state(self, node, target, body=None):
        body = dict(body or {}, target=target)
        with _node_errors(node):
            self._request('PUT', '/v1/nodes/%s/states/provision' % node,
                          body=body)

    def set_power_state(self, node, target):
        with _node_errors(node):
            self._request('PUT', '/v1/nodes/%s/states/power' % node,
                          body={'target': target})

    def get_console(self, node):
        """``{'console_enabled': bool, 'console_info': dict or None}``."""
        with _node_errors(node):
            return self._request('GET', '/v1/nodes/%s/states/console' % node)

    def set_console(self, node, enabled):
        """Ask Ironic to enable or disable the console (asynchronous)."""
        with _node_errors(node):
            self._request('PUT', '/v1/nodes/%s/states/console' % node,
                          body={'enabled': enabled})

    def inject_nmi(self, node):
        # Not repeated when its answer is lost: a second NMI is a second
        # crash dump.
        with _node_errors(node):
            self._request('PUT', '/v1/nodes/%s/management/inject_nmi' % node,
                          body={}, idempotent=False)

    def set_maintenance(self, node, reason):
        with _node_errors(node):
            self._request('PUT', '/v1/nodes/%s/maintenance' % node,
                          body={'reason': reason})

    def unset_maintenance(self, node):
        with _node_errors(node):
            self._request('DELETE', '/v1/nodes/%s/maintenance' % node)

    def list_ports(self, node):
        """The node's ports, with every field."""
        return self._of_node(node, 'ports')

    def list_port_groups(self, node):
        """The node's port groups, with every field."""
        return self._of_node(node, 'portgroups')

    def _of_node(self, node, collection, key=None):
        with _node_errors(node):
            return self._request('GET', '/v1/nodes/%s/%s?detail=True' % (
                node, collection))[key or collection]

    def list_volume_connectors(self, node):
        """The node's volume connectors, with every field."""
        return self._of_node(node, 'volume/connectors', 'connectors')

    def list_volume_targets(self, node):
        """The node's volume targets, with every field."""
        return self._of_node(node, 'volume/targets', 'targets')

    def create_volume_target(self, node, volume_id, volume_type, properties,
                             boot_index):
        """Add a volume target; Ironic wants the node powered off.

        Not retried: a lost answer would make the retry a duplicate
        (Ironic refuses a second target of a boot index, 409).
        """
        with _node_errors(node):
            return self._request('POST', '/v1/volume/targets', body={
                'node_uuid': node, 'volume_id': volume_id,
                'volume_type': volume_type, 'properties': properties,
                'boot_index': boot_index}, idempotent=False)

    def delete_volume_target(self, node, target_uuid):
        """Delete a volume target; one already gone is fine."""
        try:
            self._request('DELETE', '/v1/volume/targets/%s' % target_uuid)
        except exception.IronicAPIError as e:
            if e.status_code != 404:
                raise _node_error(e, node)

    def list_vifs(self, node):
        return [v['id'] for v in
                self._request('GET', '/v1/nodes/%s/vifs' % node)['vifs']]

    def attach_vif(self, node, vif_id):
        """Attach a VIF; one attached already is fine.

        :raises NodeConflict: Ironic refused it (a locked node, no free
            port), read back: a 409 alone does not say which.
        """
        try:
            self._request('POST', '/v1/nodes/%s/vifs' % node,
                          body={'id': vif_id})
        except exception.IronicAPIError as e:
            if e.status_code == 409 and vif_id in self.list_vifs(node):
                return
            raise _node_error(e, node)

    def detach_vif(self, node, vif_id):
        try:
            self._request('DELETE', '/v1/nodes/%s/vifs/%s' % (node, vif_id))
        except exception.IronicAPIError as e:
            if e.status_code not in (400, 404):  # not attached, node gone
                raise _node_error(e, node)

    def list_shards(self):
        """``{shard_key: node_count}``; empty before API 1.82."""
        if not self.supports('shards'):
            return {}
        shards = self._request('GET', '/v1/shards')['shards']
        return {s['name']: s['count'] for s in shards}

    # -- allocations ----------------------------------------------------------

    def create_allocation(self, uuid, candidate_nodes, mark,
                          resource_class=None, traits=None, owner=None,
                          deadline=None):
        """POST an allocation; its UUID is the consumer's (instance) UUID.

        Its ``extra`` carries the ownership ``mark`` (:mod:`.ownership`).

        :raises RequestOutcomeUnknown: the answer was lost; read back with
            :meth:`get_allocation` (the UUID makes that unambiguous).
        """
        body = {'uuid': uuid, 'candidate_nodes': list(candidate_nodes),
                'extra': {ownership.KEY: mark}}
        if resource_class:
            body['resource_class'] = resource_class
        if traits:
            body['traits'] = sorted(traits)
        if owner:
            body['owner'] = owner
        try:
            return self._request('POST', '/v1/allocations', body=body,
                                 idempotent=False, deadline=deadline)
        except exception.IronicAPIError as e:
            if e.status_code == 409:
                raise exception.AllocationFailed(
                    allocation=uuid, reason=e.reason)
            raise

    def get_allocation(self, uuid):
        """The allocation, or None when there is none."""
        try:
            return self._request('GET', '/v1/allocations/%s' % uuid)
        except exception.IronicAPIError as e:
            if e.status_code == 404:
                return None
            raise

    def delete_allocation(self, uuid):
        """Delete an allocation; an absent one is not an error."""
        try:
            self._request('DELETE', '/v1/allocations/%s' % uuid)
        except exception.IronicAPIError as e:
            if e.status_code != 404:
                raise

    def list_allocations(self, fields=None, **filters):
        return list(self._iter('/v1/allocations', 'allocations', fields,
                               PAGE_SIZE, filters))


def _query_value(value):
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return ','.join(sorted(value))
    return value


def _reason(error):
    return getattr(error, 'details', None) or str(error)


def _api_error(error, method, url):
    return exception.IronicAPIError(status_code=error.http_status,
                                    reason=_reason(error),
                                    method=method, url=url)


@contextlib.contextmanager
def _node_errors(node):
    """Errors of a request about ``node`` as :func:`_node_error` says."""
    try:
        yield
    except exception.IronicAPIError as e:
        raise _node_error(e, node)


def _node_error(error, node):
    """Narrow an IronicAPIError about one node."""
    if error.status_code == 404:
        return exception.NodeNotFound(node=node)
    if error.status_code == 409:
        return exception.NodeConflict(node=node, reason=error.reason)
    return error
