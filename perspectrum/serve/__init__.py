"""Serving: the HTTP API and the web pages (``app``), and what they use."""
