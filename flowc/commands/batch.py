"""Running one command over a whole file as a batch job.

A command that builds a large model of a file (its AST, the compiled graph, the
checker's state space) keeps all of it alive until the file is done. Python's cycle
collector would walk that whole, growing heap again and again while it is built: on a
1 MB flow that costs about two thirds of `flowc check`'s time and makes it grow faster
than the file. :func:`collector_paused` pauses the collector for one file's work and
restores it afterwards, so the cyclic garbage of one file is still collected before
the next. A command is an entry point of its own process (:mod:`flowc.collector`).
"""

from __future__ import annotations

from flowc.collector import paused as collector_paused

__all__ = ["collector_paused"]
