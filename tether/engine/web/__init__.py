"""The `ctx.web` capability: search and fetch providers behind one seam.

`types` holds what crosses the seam; `registry` selects providers by configured name; `local`
fetches from this host with SSRF checks (`ssrf`, `pinned`); `deepseek`, `searxng` and `bing`
are the remote providers; `html_markdown` and `charset` turn bytes into text; `capability` is
the object a session's tools call; `build` makes it from the config and the environment.
Importing this package imports nothing heavy: httpx is loaded when a request is made.
"""
