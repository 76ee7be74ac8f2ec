"""``/api/docs``: the OpenAPI document rendered by Swagger UI, whose files ship in
this package (``static/swagger-ui/``, pinned, with its licence) and are served
under ``/api/static/``: the page loads nothing from elsewhere."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
SWAGGER_UI_VERSION = "5.35.0"  # swagger-ui-dist on npm: see static/swagger-ui/README.md

# relative URLs: the page is /api/docs, its files /api/static/…, the document /api/openapi.json
PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relaygate management API</title>
<link rel="stylesheet" href="static/swagger-ui/swagger-ui.css?v={SWAGGER_UI_VERSION}">
</head>
<body>
<div id="swagger-ui"></div>
<noscript>This page needs JavaScript; the document itself is <a href="openapi.json">openapi.json</a>.</noscript>
<script src="static/swagger-ui/swagger-ui-bundle.js?v={SWAGGER_UI_VERSION}"></script>
<script src="static/docs.js?v={SWAGGER_UI_VERSION}"></script>
</body>
</html>
"""


def static_mount() -> Mount:
    """``/static``: the page's files (under the API's mount)."""
    return Mount("/static", StaticFiles(directory=STATIC), name="api-static")
