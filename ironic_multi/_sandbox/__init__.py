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


"""The end-to-end sandbox behind ``ironic-multi-sandbox`` (private).

``fleet``
    the nodes, flavors and waves, computed from N, K, M and a seed;
``preflight``
    what is checked before anything starts (the coordination URL);
``scenario``
    the phases, on a real Ironic and Nova's in-process services;
``sampler``
    placement's free counts against Ironic's, on a fixed period;
``checks``
    double bookings, other projects' nodes, capacity: pure functions;
``display``, ``report``, ``chart``
    rich's progress rows, the final tables, the matplotlib PNG;
``run``
    all of it in order, signals, clean-up and the exit code.

Nothing here is imported by the driver or the reservation layer.
"""
