"""What the hosting platform says about where orc runs.

App Service and Azure Functions set ``WEBSITE_*`` variables in every app's environment themselves; they are facts
about the host, not choices an operator makes, so they are read here rather than being settings.
"""

from __future__ import annotations

import os


def on_azure() -> bool:
    """Running on App Service / Azure Functions (the platform sets ``WEBSITE_SITE_NAME``)."""
    return bool(os.environ.get("WEBSITE_SITE_NAME"))


def easyauth_enabled() -> bool:
    """App Service authentication (Easy Auth) is on: only then is ``X-MS-CLIENT-PRINCIPAL`` set by the platform
    rather than by a client (the platform sets ``WEBSITE_AUTH_ENABLED=True``)."""
    return os.environ.get("WEBSITE_AUTH_ENABLED", "").strip().lower() in ("true", "1")
