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

"""Sphinx configuration of the ironic-multi release notes.

reno's extension reads the notes from the git history of this repository
(``releasenotes/notes``): a note shows once it is committed.
"""

# -- General configuration ---------------------------------------------------

extensions = [
    'openstackdocstheme',
    'reno.sphinxext',
]

project = 'ironic-multi Release Notes'
copyright = '2026, The ironic-multi Authors'

source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'

# -- openstackdocstheme ------------------------------------------------------

openstackdocs_repo_name = 'x/ironic-multi'
openstackdocs_use_storyboard = False
openstackdocs_bug_project = 'ironic-multi'
openstackdocs_bug_tag = 'releasenotes'
openstackdocs_auto_name = False

# -- HTML output -------------------------------------------------------------

html_theme = 'openstackdocs'
