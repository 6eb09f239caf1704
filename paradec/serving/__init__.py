"""Serving paradec: the HTTP service, its Ray Serve deployment, the lanes and worker threads runs go
through, and the production engines (vLLM, SGLang) it is compared with."""
