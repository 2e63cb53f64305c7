"""Runs the official MCP SDK client over HTTP against a URL and prints what it saw as JSON.

Usage: sdk_client.py URL MODE   (MODE is "legacy" or "auto")
Tests run it as a child of the stand-in ``claude`` so the daemon sees a Claude session.
"""

import asyncio
import json
import sys

from mcp import Client


async def main(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:
        tools = await client.list_tools()
        result = await client.call_tool("whoami", {})
        print(
            json.dumps(
                {
                    "tools": [t.name for t in tools.tools],
                    "is_error": result.is_error,
                    "whoami": result.structured_content,
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
