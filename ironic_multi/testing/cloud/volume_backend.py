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

"""The cloud's storage: Cinder's own fake volume driver, with images.

The fake nodes boot nothing, so their volumes need no bytes: this stands
in for a storage array as Ironic's fake hardware stands in for the
machines.  It is Cinder's ``FakeLoggingVolumeDriver`` (which Cinder's own
functional tests run: every call logged, nothing executed, iSCSI
connection info), able besides to make a volume from an image: it clones
the image as an array with a Glance back end does, where Cinder would
otherwise download it and read it with ``qemu-img``, which this machine
lacks.

Only cinder-volume imports this module (``[fake] volume_driver``), from
the cloud's overlay.
"""

from cinder.tests import fake_driver
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class FakeVolumeDriver(fake_driver.FakeLoggingVolumeDriver):
    """Cinder's fake driver, with volumes made from images."""

    def clone_image(self, context, volume, image_location, image_meta,
                    image_service):
        LOG.info('Volume %(volume)s cloned from image %(image)s',
                 {'volume': volume.id, 'image': image_meta.get('id')})
        return {}, True

    def copy_volume_to_image(self, context, volume, image_service,
                             image_meta):
        LOG.info('Volume %(volume)s copied to image %(image)s',
                 {'volume': volume.id, 'image': image_meta.get('id')})
