"""A project's settings, shared by the command line and the language server.

``[tool.flowc]`` in ``pyproject.toml`` (:mod:`~flowc.project.config`), the trust rule
that decides whether its plugins are imported (:mod:`~flowc.project.trust`), loading
those plugins (:mod:`~flowc.project.plugins`), the pages of ``flowc explain``
(:mod:`~flowc.project.explain`) and what is said when Graphviz did not draw
(:mod:`~flowc.project.layout`). :mod:`flowc.commands` and :mod:`flowc.lsp` both import
these modules; neither imports the other.
"""
