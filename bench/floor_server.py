"""The floor: a bare aiohttp TLS server that reads the body and answers a fixed AdmissionReview.

Same TLS settings as ``jobgate webhook``, no parsing, no rules: what any Python webhook on this
stack costs before doing any work. With ``--fast-path`` the fixed answer goes out through
jobgate's own admission fast path (``webhook/fastpath.py``) instead of aiohttp's handler: what
jobgate's HTTP and TLS layer costs a review before the review itself.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from aiohttp import web

from jobgate.webhook.fastpath import FastLane
from jobgate.webhook.server import EVENT_LOOPS, OFFLOAD_BYTES, loop_factory
from jobgate.webhook.tlsreload import server_context

FIXED_ANSWER = (
    b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":'
    b'{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}}'
)


async def answer(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=FIXED_ANSWER, content_type="application/json")


def fixed_answer(body: bytes, arrived: float) -> tuple[int, bytes]:
    return 200, FIXED_ANSWER


async def main(tls_dir: Path, host: str, port: int, fast_path: bool) -> None:
    context = server_context()
    context.load_cert_chain(tls_dir / "tls.crt", tls_dir / "tls.key")
    app = web.Application(client_max_size=7 * 1024 * 1024)
    app.router.add_post("/mutate", answer)
    app.router.add_post("/validate", answer)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    if fast_path:
        assert runner.server is not None
        answers = {"/mutate": fixed_answer, "/validate": fixed_answer}
        lane = FastLane(answers, runner.server, offload_bytes=OFFLOAD_BYTES)
        await asyncio.get_running_loop().create_server(lane, host, port, ssl=context, backlog=1024)
    else:
        await web.TCPSite(runner, host, port, ssl_context=context, backlog=1024).start()
    print(f"floor serving on https://{host}:{port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls-dir", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--event-loop", choices=EVENT_LOOPS, default="asyncio", help="as jobgate webhook's option")
    parser.add_argument("--fast-path", action="store_true", help="answer through jobgate's fast path, not aiohttp's")
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=loop_factory(args.event_loop)) as runner:
        runner.run(main(args.tls_dir, args.host, args.port, args.fast_path))
