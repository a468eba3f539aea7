"""The one list of environment settings, read once into a typed model (pydantic-settings).

Each field is read from the variable named by its ``validation_alias`` (``GUARDRAIL_JUDGE``,
``OPENAI_API_KEY``...); a blank variable counts as unset, except ``GUARDRAIL_API_KEY``: a blank token
is refused (:class:`ConfigurationError`) rather than read as "no token". Nothing else is read: no ``.env`` file,
no secrets directory. Code may also pass fields by name: ``Settings(judge="openai")``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

JudgeName = Literal["local", "openai", "anthropic", "ollama"]
JudgePrecision = Literal["auto", "float32", "int8"]
"""How the embedded judge's ONNX graph computes (``GUARDRAIL_JUDGE_PRECISION``; ``LocalJudge(quantize=...)``)."""
ArchiveName = Literal["wayback"]
"""The archives a dead link can be looked up in (``GUARDRAIL_ARCHIVE``)."""

DEFAULT_MAX_BYTES = 5_000_000
"""The default cap on a fetched body, decoded (``GUARDRAIL_MAX_BYTES``)."""
DEFAULT_FETCH_TIMEOUT = 15.0
"""Seconds per page request by default (``GUARDRAIL_FETCH_TIMEOUT``)."""
DEFAULT_MAX_ANSWER_CHARS = 20_000
"""Most characters in one answer (or claim) checked at once, about Vertex's 4096-token answer limit."""
DEFAULT_MAX_CLAIMS = 200
"""Most claims checked in one call (a Vertex-sized answer of 4096 tokens holds about 200 sentences)."""
DEFAULT_MAX_URLS = 100
"""Most unique URLs fetched for one call."""
DEFAULT_MAX_CHECKS = 3200
"""Most (claim, source) pairs judged in one call: 200 claims against the 16 facts the grounding check
keeps per claim."""
DEFAULT_DEADLINE = 100.0
"""Seconds one ``verify``, ``verify_answer`` or guard call may take by default (``GUARDRAIL_DEADLINE``)."""
FETCH_SHARE = 0.6
"""The most of the deadline one page's fetch may take (its attempts, redirects and API calls
together): the rest is left for reading and judging, so a hung fetch reads ``fetch_timeout``."""
REQUEST_SHARE = 0.9
"""The most of the service's request timeout a call's deadline may take: the rest is for the
policy and the answer, so a slow page or judge is a verdict in a 200, not a 504."""
DEFAULT_MAX_CONNECTIONS = 1000
"""Connections the service keeps open at once, in all (``GUARDRAIL_MAX_CONNECTIONS``)."""
DEFAULT_MAX_CLIENT_CONNECTIONS = 100
"""Connections the service keeps open at once from one client address (``GUARDRAIL_MAX_CLIENT_CONNECTIONS``)."""
DEFAULT_HOST_CONCURRENCY = 4
"""Requests in flight to one host, by default (``GUARDRAIL_HOST_CONCURRENCY``)."""
DEFAULT_HOST_RATE = 5.0
"""Requests per second to one host after a burst of as many, by default (``GUARDRAIL_HOST_RATE``)."""
DEFAULT_WAYBACK_URL = "https://archive.org"
"""Where the Wayback Machine's availability API is asked (``GUARDRAIL_WAYBACK_URL``)."""
DEFAULT_ARCHIVE_TIMEOUT = 10.0
"""Seconds one archive lookup may take (``GUARDRAIL_ARCHIVE_TIMEOUT``); then the link stays dead."""
DEFAULT_SUGGEST_BUDGET = 12
"""Most (claim, other source) pairs judged per answer to suggest citations (``GUARDRAIL_SUGGEST_BUDGET``)."""
_OFF = frozenset({"", "off", "none", "no", "0", "false"})


class ConfigurationError(ValueError):
    """A setting is missing or wrong; the message names the variable, never a secret's value."""


_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("guardrail_settings_environment", default=None)


_BLANK_REFUSED = frozenset({"GUARDRAIL_API_KEY"})
"""Variables whose blank value is an error rather than "unset"."""


class _MappingSource(EnvSettingsSource):
    """Environment variables read from a mapping (``os.environ`` or the one given to ``from_env``)."""

    def __init__(self, settings_cls: type[BaseSettings], environment: Mapping[str, str]) -> None:
        self._environment = environment
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # Names are case-sensitive (model_config); values are stripped, and a blank one is unset,
        # except the service's token: a blank one is refused, never read as "serve without a token".
        return {
            name: value.strip() for name, value in self._environment.items() if value.strip() or name in _BLANK_REFUSED
        }


def _env(variable: str, description: str = "", **kwargs: Any) -> Any:
    """A field read from ``variable``."""
    return Field(validation_alias=variable, description=description or None, **kwargs)


class Settings(BaseSettings):
    """Every setting the guardrail reads from the environment, with its default.

    ``Settings()`` reads the environment; :meth:`from_env` reads it too (or a mapping) and turns a
    bad value into :class:`ConfigurationError`. Pass an instance to
    :func:`guardrail.runtime.build_verifier` or ``Verifier(settings=...)`` to configure in code.
    """

    model_config = SettingsConfigDict(
        populate_by_name=True, env_ignore_empty=True, extra="ignore", case_sensitive=True, frozen=False
    )

    judge: JudgeName | None = _env("GUARDRAIL_JUDGE", "local, openai, anthropic or ollama", default=None)
    judge_model: str | None = _env("GUARDRAIL_JUDGE_MODEL", default=None)
    judge_timeout: float = _env("GUARDRAIL_JUDGE_TIMEOUT", "seconds", default=60.0, gt=0)
    judge_rounds: int = _env(
        "GUARDRAIL_JUDGE_ROUNDS", "the embedded judge's reading: 2, or 1 for the fast path", default=2, ge=1, le=2
    )
    judge_precision: JudgePrecision = _env(
        "GUARDRAIL_JUDGE_PRECISION",
        "auto (int8 for the fast path, float32 otherwise), float32 or int8",
        default="auto",
    )
    openai_api_key: SecretStr | None = _env("OPENAI_API_KEY", default=None)
    openai_base_url: str | None = _env("OPENAI_BASE_URL", default=None)
    anthropic_api_key: SecretStr | None = _env("ANTHROPIC_API_KEY", default=None)
    anthropic_base_url: str | None = _env("ANTHROPIC_BASE_URL", default=None)
    ollama_base_url: str = _env("OLLAMA_BASE_URL", default="http://localhost:11434/v1")
    crawlbase_token: SecretStr | None = _env("CRAWLBASE_TOKEN", default=None)
    crawlbase_js_token: SecretStr | None = _env("CRAWLBASE_JS_TOKEN", default=None)
    crawlbase_api_url: str = _env("CRAWLBASE_API_URL", default="https://api.crawlbase.com/")
    crawlbase_storage_url: str = _env("CRAWLBASE_STORAGE_URL", default="https://api.crawlbase.com/storage")
    allow_private_hosts: bool = _env("GUARDRAIL_ALLOW_PRIVATE_HOSTS", "1/true/yes/on or 0/false/no/off", default=False)
    fetch_timeout: float = _env("GUARDRAIL_FETCH_TIMEOUT", "seconds", default=DEFAULT_FETCH_TIMEOUT, gt=0)
    fetch_attempts: int = _env("GUARDRAIL_FETCH_ATTEMPTS", "tries per page for transient failures", default=3, ge=1)
    max_bytes: int = _env("GUARDRAIL_MAX_BYTES", default=DEFAULT_MAX_BYTES, gt=0)
    max_redirects: int = _env("GUARDRAIL_MAX_REDIRECTS", default=5, ge=0)
    concurrency: int = _env("GUARDRAIL_CONCURRENCY", default=8, ge=1)
    host_concurrency: int = _env(
        "GUARDRAIL_HOST_CONCURRENCY", "requests in flight to one host", default=DEFAULT_HOST_CONCURRENCY, ge=1
    )
    host_rate: float = _env(
        "GUARDRAIL_HOST_RATE", "requests per second to one host, 0 for no limit", default=DEFAULT_HOST_RATE, ge=0
    )
    top_k: int = _env("GUARDRAIL_TOP_K", default=3, ge=1)
    cache_path: Path | None = _env("GUARDRAIL_CACHE", "SQLite page cache file, or off", default=None)
    cache_ttl: float = _env("GUARDRAIL_CACHE_TTL", "seconds", default=24 * 3600.0, ge=0)
    audit_path: Path | None = _env("GUARDRAIL_AUDIT_DB", "SQLite audit store file, or off", default=None)
    api_key: SecretStr | None = _env("GUARDRAIL_API_KEY", "the service's bearer token", default=None)
    max_body_bytes: int = _env("GUARDRAIL_MAX_BODY_BYTES", "service request body cap", default=8 * 1024 * 1024, gt=0)
    max_answer_chars: int = _env(
        "GUARDRAIL_MAX_ANSWER_CHARS", "characters per answer or claim", default=DEFAULT_MAX_ANSWER_CHARS, gt=0
    )
    max_claims: int = _env("GUARDRAIL_MAX_CLAIMS", "claims checked per call", default=DEFAULT_MAX_CLAIMS, gt=0)
    max_urls: int = _env("GUARDRAIL_MAX_URLS", "unique URLs fetched per call", default=DEFAULT_MAX_URLS, gt=0)
    max_checks: int = _env(
        "GUARDRAIL_MAX_CHECKS", "(claim, source) pairs judged per call", default=DEFAULT_MAX_CHECKS, gt=0
    )
    deadline: float = _env(
        "GUARDRAIL_DEADLINE", "seconds per verify / verify_answer / guard call", default=DEFAULT_DEADLINE, gt=0
    )
    request_timeout: float = _env("GUARDRAIL_REQUEST_TIMEOUT", "service: seconds per request", default=120.0, gt=0)
    body_timeout: float = _env("GUARDRAIL_BODY_TIMEOUT", "service: seconds to receive a body", default=30.0, gt=0)
    max_connections: int = _env(
        "GUARDRAIL_MAX_CONNECTIONS", "service: connections open at once", default=DEFAULT_MAX_CONNECTIONS, ge=1
    )
    max_client_connections: int = _env(
        "GUARDRAIL_MAX_CLIENT_CONNECTIONS",
        "service: connections open at once from one client address",
        default=DEFAULT_MAX_CLIENT_CONNECTIONS,
        ge=1,
    )
    audit_wait: float = _env(
        "GUARDRAIL_AUDIT_WAIT", "CLI: seconds to wait at the end for audit rows held up", default=30.0, ge=0
    )
    archive: ArchiveName | None = _env(
        "GUARDRAIL_ARCHIVE", "wayback: look dead links up in the Wayback Machine (it sees their URLs)", default=None
    )
    wayback_url: str = _env("GUARDRAIL_WAYBACK_URL", "the Wayback Machine's base URL", default=DEFAULT_WAYBACK_URL)
    archive_timeout: float = _env(
        "GUARDRAIL_ARCHIVE_TIMEOUT", "seconds per archive lookup", default=DEFAULT_ARCHIVE_TIMEOUT, gt=0
    )
    suggest: bool = _env(
        "GUARDRAIL_SUGGEST", "check failing claims against the other sources at hand (1/0)", default=False
    )
    suggest_budget: int = _env(
        "GUARDRAIL_SUGGEST_BUDGET", "(claim, other source) pairs per answer", default=DEFAULT_SUGGEST_BUDGET, ge=0
    )

    @field_validator("judge", mode="before")
    @classmethod
    def _judge_name(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("archive", mode="before")
    @classmethod
    def _archive_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return None if value in _OFF else value
        return value

    @field_validator("api_key")
    @classmethod
    def _api_key_not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        """A blank token would lock every route (no header can carry it): refuse it. White space
        around a token is dropped, as it is from the header it is compared with."""
        if value is None:
            return None
        key = value.get_secret_value().strip()
        if not key:
            raise ValueError("must not be blank: set a token, or leave GUARDRAIL_API_KEY unset to serve without one")
        return SecretStr(key)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the environment (or the mapping given to :meth:`from_env`)."""
        environment = _ENVIRONMENT.get()
        return (init_settings, _MappingSource(settings_cls, os.environ if environment is None else environment))

    def page_budget(self, wanted: float) -> float:
        """Seconds one page's fetch may take in all: ``wanted`` (the fetcher's own budget), cut to
        :data:`FETCH_SHARE` of the deadline, so the fetch ends (``fetch_timeout``) inside the call."""
        return min(wanted, FETCH_SHARE * self.deadline)

    def within_request_timeout(self) -> Settings:
        """These settings with the deadline cut to :data:`REQUEST_SHARE` of ``request_timeout``
        (the service): every stage's budget then fits inside the request's."""
        fitted = min(self.deadline, REQUEST_SHARE * self.request_timeout)
        return self if fitted == self.deadline else self.model_copy(update={"deadline": fitted})

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable that sets field ``name`` (e.g. ``GUARDRAIL_JUDGE``)."""
        return str(cls.model_fields[name].validation_alias)

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        """Every environment variable the settings read, sorted: what a test harness clears so a
        developer's own keys and choices (``GUARDRAIL_JUDGE_ROUNDS``...) cannot change a run."""
        return tuple(sorted(str(field.validation_alias) for field in cls.model_fields.values()))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default ``os.environ``); a bad value raises
        :class:`ConfigurationError` naming the variable (never a secret's value)."""
        token = _ENVIRONMENT.set(env)
        try:
            return cls()
        except ValidationError as exc:
            raise ConfigurationError(_describe(exc)) from None
        finally:
            _ENVIRONMENT.reset(token)


def _describe(error: ValidationError) -> str:
    """One line per bad variable, with pydantic's reason but never the value given."""
    problems = []
    for item in error.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "settings"
        problems.append(f"{where}: {item['msg']}")
    return "invalid guardrail setting: " + "; ".join(problems)
