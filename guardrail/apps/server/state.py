"""The service state: the verifier the routes share, the stores opened for it, and readiness."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from guardrail.apps.server.models import ComponentHealth, FetcherHealth, Health, HealthStatus, PublicHealth
from guardrail.core.schema import JudgeRequest
from guardrail.extras import install_command
from guardrail.fetch.base import Fetcher
from guardrail.judges.base import Judge
from guardrail.retrieval import Embedder
from guardrail.runtime import Runtime, build_runtime
from guardrail.settings import ConfigurationError, Settings
from guardrail.verifier import Verifier

__all__ = ["ServiceState"]

log = logging.getLogger("guardrail.server")

_NO_JUDGE = f"no judge is available: {install_command('local')} (the embedded judge) or set GUARDRAIL_JUDGE"

SHUTDOWN_AUDIT_WAIT = 2.0
"""Seconds the service waits at shutdown for audit rows still queued (the rest are logged as lost)."""


@dataclass
class ServiceState:
    """What the routes share: the verifier, the stores opened for it, and readiness."""

    settings: Settings
    verifier: Verifier | None
    config_error: str | None = None
    cache_path: str | None = None
    audit_path: str | None = None
    warm: bool = True
    judge_loaded: bool | None = None
    embedder_loaded: bool = False
    warm_errors: dict[str, str] = field(default_factory=dict)
    runtime: Runtime | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        settings: Settings | None = None,
        verifier: Verifier | None = None,
        *,
        fetcher: Fetcher | None = None,
        warm: bool = True,
    ) -> ServiceState:
        """The state around ``verifier`` as given, or around one built by the composition root
        (:func:`~guardrail.runtime.build_runtime`: page cache, batched judge calls, audit store as
        the settings say) from ``settings`` (default: the environment) and ``fetcher``, its deadline
        cut to fit inside ``GUARDRAIL_REQUEST_TIMEOUT`` (:meth:`Settings.within_request_timeout
        <guardrail.settings.Settings.within_request_timeout>`; a ``verifier`` given keeps its own).
        A missing setting is kept in :attr:`config_error` (the routes answer 503), not raised."""
        if verifier is not None:
            if fetcher is not None:
                raise ValueError("pass either verifier or fetcher, not both")
            return cls(settings=settings or verifier.settings, verifier=verifier, warm=warm)
        # Every stage's budget inside the request's: the call's deadline, and the fetchers' page
        # budgets inside it, so a hung page or judge is a verdict in a 200 rather than a 504.
        fitted = (settings or Settings.from_env()).within_request_timeout()
        state = cls(settings=fitted, verifier=None, warm=warm)
        try:
            runtime = build_runtime(
                state.settings,
                cache=True,
                batch_judge_calls=True,
                fetcher=fetcher,
                defer_audit_errors=True,  # an unusable audit store makes /health degraded, not a crash
                audit_flush_timeout=SHUTDOWN_AUDIT_WAIT,
            )
        except ConfigurationError as exc:
            state.config_error = str(exc)
            return state
        state.runtime = runtime
        state.verifier = runtime.verifier
        state.cache_path = str(runtime.cache.path) if runtime.cache is not None else None
        state.audit_path = str(runtime.audit.path) if runtime.audit is not None else None
        state._closers.append(runtime.close)
        return state

    @property
    def api_key(self) -> str | None:
        """The bearer token every route but ``/v1/health`` (and ``/health``) needs (``GUARDRAIL_API_KEY``); None when
        unset or empty."""
        key = self.settings.api_key
        return (key.get_secret_value() or None) if key is not None else None

    def require_verifier(self) -> Verifier:
        """The verifier, its judge resolved; ConfigurationError (-> 503) when a setting is missing."""
        if self.config_error is not None or self.verifier is None:
            raise ConfigurationError(self.config_error or "the service is not configured")
        _ = self.verifier.judge  # raises ConfigurationError naming the missing variable
        return self.verifier

    async def start(self) -> None:
        """Resolve the judge and load and warm the models, once, off the event loop."""
        verifier = self.verifier
        if verifier is None or not self.warm:
            return
        try:
            judge = verifier.judge
        except ConfigurationError as exc:
            self.config_error = str(exc)
            log.error("guardrail service is not configured: %s", exc)
            return
        await self._warm_embedder(verifier.embedder)
        if judge is not None and judge.cpu_bound:  # a remote model has nothing to load here
            await self._warm_judge(judge)

    async def _warm_embedder(self, embedder: Embedder) -> None:
        try:
            await asyncio.to_thread(embedder.embed, ["warm-up"])
            self.embedder_loaded = True
        except Exception as exc:  # reported by /health; requests that need it will fail too
            self.warm_errors["embedder"] = f"{type(exc).__name__}: {exc}"
            log.exception("embedder failed to load")

    async def _warm_judge(self, judge: Judge) -> None:
        try:
            await asyncio.to_thread(judge.load)
            await judge.judge([JudgeRequest(claim="Water boils.", passages=["Water boils at 100 degrees."])])
            self.judge_loaded = True
        except Exception as exc:  # reported by /health
            self.judge_loaded = False
            self.warm_errors["judge"] = f"{type(exc).__name__}: {exc}"
            log.exception("judge failed to load")

    def close(self) -> None:
        """Close the stores this state opened."""
        for close in self._closers:
            try:
                close()
            except Exception:
                log.exception("closing a store failed")

    def health(self, *, detailed: bool = True) -> Health | PublicHealth:
        """The readiness report of ``GET /v1/health``; without ``detailed``, the status alone (no
        paths, no settings, no error texts: what a caller without the token sees)."""
        report = self._full_health()
        return report if detailed else PublicHealth(status=report.status)

    def _full_health(self) -> Health:
        fetcher = FetcherHealth(ssrf_guard=not self.settings.allow_private_hosts, cache=self.cache_path)
        auth = self.api_key is not None
        verifier = self.verifier
        if verifier is None:
            fetcher.error = self.config_error
            judge = ComponentHealth(error=self.config_error)
            return Health(status="unavailable", judge=judge, embedder=ComponentHealth(), fetcher=fetcher, auth=auth)
        fetcher.name, fetcher.ready = verifier.fetcher.name, True
        fetcher.ssrf_guard = not verifier.settings.allow_private_hosts
        embedder = ComponentHealth(
            name=verifier.embedder.name,
            loaded=self.embedder_loaded,
            ready="embedder" not in self.warm_errors,
            error=self.warm_errors.get("embedder"),
        )
        judge = self._judge_health(verifier)
        audit = self.runtime.audit_status if self.runtime is not None else None
        status: HealthStatus = "ok" if judge.ready and embedder.ready and (audit is None or audit.ok) else "degraded"
        if self.config_error is not None:
            status = "unavailable"
        return Health(status=status, judge=judge, embedder=embedder, fetcher=fetcher, audit=audit, auth=auth)

    def _judge_health(self, verifier: Verifier) -> ComponentHealth:
        """The judge's part of /health; a setting found missing now is kept in config_error."""
        judge = None
        if self.config_error is None:
            try:
                judge = verifier.judge
            except ConfigurationError as exc:
                self.config_error = str(exc)
        if self.config_error is not None:
            return ComponentHealth(error=self.config_error)
        if judge is None:
            return ComponentHealth(error=_NO_JUDGE)
        return ComponentHealth(
            name=judge.name,
            model=judge.model,
            loaded=self.judge_loaded,
            ready="judge" not in self.warm_errors,
            error=self.warm_errors.get("judge"),
        )
