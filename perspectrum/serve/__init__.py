"""Serving: the HTTP API and web page (``app``), and many claims at once (``batch``)."""
