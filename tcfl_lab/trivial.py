"""A trivial FastAPI endpoint: the yardstick `tcfl bench --ci` times `tcfl serve` against.

``POST /v1/triage`` reads the JSON body and answers a small JSON object; served by uvicorn with
the options `tcfl serve` gives it, it is what one process of the same stack costs a request
before any work of tcfl's own.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

app = FastAPI()


@app.post("/v1/triage")
async def triage(request: Request) -> dict[str, Any]:
    body = await request.json()
    return {"status": "done", "keys": len(body)}


def main(port: int) -> None:
    import uvicorn

    # the options of `tcfl serve` (app/cli/serve.py)
    uvicorn.run(app, host="127.0.0.1", port=port, access_log=False, log_config=None, log_level="warning")


if __name__ == "__main__":
    import sys

    main(int(sys.argv[1]))
