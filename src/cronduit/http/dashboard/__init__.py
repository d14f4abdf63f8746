"""The dashboard at ``/``: server-rendered pages of jobs, their slot ledgers, runs and their
logs, and the audit log, with forms to run a job now, pause and resume it.

Its routes (:func:`dashboard_routes`) are plain Starlette routes of the HTTP app; its
templates and static files (the vendored htmx among them) ship inside this package.
"""

from cronduit.http.dashboard.routes import OPERATOR, PAGE, dashboard_routes

__all__ = ["OPERATOR", "PAGE", "dashboard_routes"]
