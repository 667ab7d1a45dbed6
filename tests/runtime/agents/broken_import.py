"""A module that fails while it is imported."""

import flowc_no_such_module_anywhere  # noqa: F401

AGENTS = {}
