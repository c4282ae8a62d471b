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

"""Sphinx configuration of the ironic-multi documentation.

The configuration reference is generated from the options
(``oslo.config.opts`` entry point ``ironic_multi``) and the CLI reference
from the commands (entry point namespace ``ironic_multi.manage``): the
package must be installed, as ``./tox.sh -e docs`` does.
"""

# -- General configuration ---------------------------------------------------

extensions = [
    'cliff.sphinxext',
    'oslo_config.sphinxext',
    'openstackdocstheme',
]

project = 'ironic-multi'
copyright = '2026, The ironic-multi Authors'

source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'

# ironic-multi-manage is the program the generated CLI reference documents.
autoprogram_cliff_application = 'ironic-multi-manage'
# The commands are this distribution's own, not a plugin's.
autoprogram_cliff_app_dist_name = 'ironic-multi'

# -- openstackdocstheme ------------------------------------------------------

openstackdocs_repo_name = 'x/ironic-multi'
openstackdocs_use_storyboard = False
openstackdocs_bug_project = 'ironic-multi'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False

# -- HTML output -------------------------------------------------------------

html_theme = 'openstackdocs'
