"""`judge serve`: the review queue, blind labelling and agreement in the browser.

A Starlette app (judge.serve.app) over the same Store as `judge review` and `judge label`:
server-rendered Jinja2 pages (autoescaped, every value made visible first), a little vanilla
JS for the keys (static/keys.js, no build step), annotator tokens (judge.serve.auth, hashes in
the store), CSRF on every form, strict security headers (judge.serve.headers).
"""

from judge.serve.app import ServeConfig as ServeConfig
from judge.serve.app import create_app as create_app

__all__ = ["ServeConfig", "create_app"]
