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

"""An instance's config drive, as Ironic takes it.

Nova's metadata service code (``nova.api.metadata``) writes the drive's
content; only the virt driver uses this module.  It stands apart from
``ironic_multi._virt`` so that the driver's package keeps to one rule that a
grep can check: nothing there names an API but the reservation layer's.
"""

import base64
import gzip
import io
import shutil
import tempfile

from nova.api.metadata import base as instance_metadata
from nova.virt import configdrive


def build(instance, network_info, admin_password=None, injected_files=None):
    """The config drive, gzipped and base64-encoded as Ironic takes it."""
    extra_md = {'admin_pass': admin_password} if admin_password else {}
    i_meta = instance_metadata.InstanceMetadata(
        instance, content=injected_files, extra_md=extra_md,
        network_info=network_info)
    compressed = io.BytesIO()
    with tempfile.NamedTemporaryFile() as image:
        with configdrive.ConfigDriveBuilder(instance_md=i_meta) as builder:
            builder.make_drive(image.name)
        image.seek(0)
        with gzip.GzipFile(fileobj=compressed, mode='wb') as gzipped:
            shutil.copyfileobj(image, gzipped)
    return base64.b64encode(compressed.getvalue()).decode()
