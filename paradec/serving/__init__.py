"""Serving paradec: the HTTP service, its Ray Serve deployment and the worker threads runs go through."""
