"""A plain async agent whose `approve` call writes what the flow does not declare."""

from flowc.runtime import Reply, ToolCall


async def reviewer(turn):
    return Reply("Approved.", (ToolCall("approve", {"note": "ok"},
                                        set={"approved": "yes", "secret": 1}),))


AGENTS = {"reviewer": reviewer}
