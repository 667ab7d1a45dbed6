"""``flowc view``: a local web page that shows the runs of a run database, and each run on
its flow's diagram with its transcript streaming live (docs/view.md).

:mod:`flowc.view.feed` reads a run from the store (no web library needed);
:mod:`flowc.view.server` is the Starlette application that serves the pages, the
diagram and the turns as server-sent events. The page's script and style are files of
this package (``static/``), served by the server itself: nothing is loaded from the
network.
"""
