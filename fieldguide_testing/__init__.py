"""Stand-ins and helpers for the tests and the benchmarks, never for the service itself.

The scripted graph and server, Redis and Postgres on loopback, the app on a thread's uvicorn,
handoff receivers: the tests and the benchmarks both need them, and benchmarks must not
import `tests`, so they live here. No production module imports this package; the
import-linter contracts (`.importlinter`, checked by `tests/test_architecture.py`) keep it so.
"""
