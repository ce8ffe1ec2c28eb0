"""The web dashboard, served by the API process at ``/`` (server-rendered, light JavaScript).

``create_app`` includes ``router`` behind the API-key dependency and serves ``STATIC_DIR`` at
``/static`` without a key.
"""

from __future__ import annotations

from app.service.dashboard.history import router as history_router
from app.service.dashboard.launches import router as launches_router
from app.service.dashboard.pages import STATIC_DIR
from app.service.dashboard.routes import router

router.include_router(history_router)  # the CI-history pages, behind the same key and CSRF checks
router.include_router(launches_router)  # launches, trends, labels and the upload form, likewise

__all__ = ["STATIC_DIR", "router"]
