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

"""Configuration files of the cloud's services, and the sections they share.

A configuration is ``{section: {option: value}}``; values are written as
oslo.config reads them (lists joined with commas, booleans in lower case).
"""

import os


def render(sections):
    lines = []
    for section, options in sections.items():
        lines.append('[%s]' % section)
        for name, value in options.items():
            if value is None:
                continue
            lines.append('%s = %s' % (name, _format(value)))
        lines.append('')
    return '\n'.join(lines)


def write(path, sections):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(render(sections))
    return path


def merge(sections, extra):
    """``sections`` with ``extra`` (same shape) laid over it."""
    merged = {name: dict(options) for name, options in sections.items()}
    for name, options in (extra or {}).items():
        merged.setdefault(name, {}).update(options)
    return merged


def _format(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ','.join(map(str, value))
    return str(value)


def password_auth(keystone, creds):
    """A keystoneauth password plugin section for a service user."""
    return {
        'auth_type': 'password',
        'auth_url': keystone.auth_url,
        'username': creds.username,
        'password': creds.password,
        'user_domain_name': creds.user_domain_name,
        'project_name': creds.project_name,
        'project_domain_name': creds.project_domain_name,
        'region_name': keystone.region,
    }


def authtoken(keystone, creds):
    """``[keystone_authtoken]``: keystonemiddleware checks tokens.

    As ``creds``; no memcached: tokens are cached in the process.
    """
    return dict(password_auth(keystone, creds),
                www_authenticate_uri=keystone.auth_url,
                service_token_roles_required=True)
