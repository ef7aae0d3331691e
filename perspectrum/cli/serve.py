"""``perspectrum serve``: the web page and the HTTP API."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Optional

import typer

from perspectrum.cli.common import (DataDir, DeviceOpt, IndexDir, ModelsDir, NoVerify, OwnEvidence, OwnPerspectives,
                                    app, load_pipeline)
from perspectrum.errors import PerspectrumError


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one, printed).")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Threads that run model work.")] = 2,
    queue: Annotated[int, typer.Option(min=0, max=10_000, help="Requests that may wait for a worker; "
                                       "past that, 503 with Retry-After.")] = 16,
    token: Annotated[Optional[str], typer.Option(envvar="PERSPECTRUM_TOKEN", show_envvar=True,
                                                 help="Bearer token every request but /health must carry.")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option(
        "--cors-origin", help="An origin whose pages may call the API (repeatable; none by default).")] = None,
    allowed_host: Annotated[Optional[list[str]], typer.Option(
        "--allowed-host", help="A host name requests may give in their Host header besides --host, localhost, "
        "127.0.0.1 and ::1 (repeatable; others get 400, which stops DNS rebinding). `*` allows any: only behind "
        "a proxy that checks the Host itself.")] = None,
    trusted_proxy: Annotated[Optional[list[str]], typer.Option(
        "--trusted-proxy", help="The address or network (10.0.0.0/8) of a proxy in front of the server whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed (repeatable; none by default: from anyone else they "
        "are ignored, so a client cannot pick its own address).")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
) -> None:
    """Serve the web page and the HTTP API (/discover, /search, /health, /metrics, /docs).

    The port answers at once; /health says `ready` once every index and model is loaded.
    """
    import socket

    # the app first: it names a missing extra in one line
    from perspectrum.serve.app import LOOPBACK_HOSTS, ServeSettings, check_bind, create_app, example_claims
    from perspectrum.serve.connections import uvicorn_config

    import uvicorn

    token = token or None  # an empty $PERSPECTRUM_TOKEN is no token
    check_bind(host, token)
    # requests must name --host, a loopback name or an --allowed-host in their Host header
    settings = ServeSettings(workers, queue, token, tuple(cors_origin or ()),
                             allowed_hosts=(host, *LOOPBACK_HOSTS, *(allowed_host or ())),
                             trusted_proxies=tuple(trusted_proxy or ()))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except (OSError, OverflowError) as exc:
        listener.close()
        raise PerspectrumError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    try:  # bound first, so a taken port fails at once; an unprepared machine is prepared here
        pipe = load_pipeline(data_dir, index_dir, models_dir, not no_verify, perspectives, evidence,
                             prepare_first=True)
        if perspectives is None:  # PERSPECTRUM's pools: offer its dev claims (read again, already verified)
            from perspectrum.data import load_dataset

            settings = replace(settings, examples=example_claims(load_dataset(data_dir, verify=False)))
    except BaseException:
        listener.close()
        raise
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    # plain and unwrapped: scripts and tests read the address (and a --port 0's port) from this line
    typer.echo(f"serving http://{shown}:{bound}/ (API docs at /docs); loading the models, /health says when ready")
    if host in ("0.0.0.0", "::") and not allowed_host:  # reached by this machine's names, which it cannot know
        typer.echo(f"note: only requests to {shown} or loopback are answered; give this machine's name or address "
                   "with --allowed-host", err=True)
    server = uvicorn.Server(uvicorn_config(create_app(pipe, settings)))
    server.run(sockets=[listener])
