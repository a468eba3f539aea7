"""The applications around the core: the command line, the HTTP service, batch runs and the demo.

Each gets its verifier from :func:`guardrail.runtime.build_runtime` and holds no verification logic.
"""
