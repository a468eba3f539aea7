"""The one list of environment settings, read once into a typed model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

JudgeName = Literal["local", "openai", "anthropic", "ollama"]

_TRUE = {"1", "true", "yes", "on"}


class ConfigurationError(ValueError):
    """A setting is missing or wrong; the message names the variable, never a secret's value."""


class Settings(BaseModel):
    """Every setting the guardrail reads from the environment, with its default.

    Build it with :meth:`from_env`; pass an instance to ``Verifier(settings=...)`` to
    configure in code instead.
    """

    judge: JudgeName | None = Field(default=None, description="GUARDRAIL_JUDGE")
    judge_model: str | None = Field(default=None, description="GUARDRAIL_JUDGE_MODEL")
    judge_timeout: float = Field(default=60.0, gt=0, description="GUARDRAIL_JUDGE_TIMEOUT (seconds)")
    openai_api_key: SecretStr | None = Field(default=None, description="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, description="OPENAI_BASE_URL")
    anthropic_api_key: SecretStr | None = Field(default=None, description="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, description="ANTHROPIC_BASE_URL")
    ollama_base_url: str = Field(default="http://localhost:11434/v1", description="OLLAMA_BASE_URL")
    crawlbase_token: SecretStr | None = Field(default=None, description="CRAWLBASE_TOKEN")
    crawlbase_js_token: SecretStr | None = Field(default=None, description="CRAWLBASE_JS_TOKEN")
    crawlbase_api_url: str = Field(default="https://api.crawlbase.com/", description="CRAWLBASE_API_URL")
    crawlbase_storage_url: str = Field(
        default="https://api.crawlbase.com/storage", description="CRAWLBASE_STORAGE_URL"
    )
    allow_private_hosts: bool = Field(default=False, description="GUARDRAIL_ALLOW_PRIVATE_HOSTS")
    fetch_timeout: float = Field(default=15.0, gt=0, description="GUARDRAIL_FETCH_TIMEOUT (seconds)")
    max_bytes: int = Field(default=5_000_000, gt=0, description="GUARDRAIL_MAX_BYTES")
    max_redirects: int = Field(default=5, ge=0, description="GUARDRAIL_MAX_REDIRECTS")
    concurrency: int = Field(default=8, ge=1, description="GUARDRAIL_CONCURRENCY")
    top_k: int = Field(default=3, ge=1, description="GUARDRAIL_TOP_K")
    cache_path: Path | None = Field(default=None, description="GUARDRAIL_CACHE (SQLite file)")
    cache_ttl: float = Field(default=24 * 3600.0, ge=0, description="GUARDRAIL_CACHE_TTL (seconds)")
    audit_path: Path | None = Field(default=None, description="GUARDRAIL_AUDIT_DB (SQLite file)")
    api_key: SecretStr | None = Field(default=None, description="GUARDRAIL_API_KEY (service bearer token)")
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024, gt=0, description="GUARDRAIL_MAX_BODY_BYTES (service request body cap)"
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default ``os.environ``); bad values raise ConfigurationError."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, field in cls.model_fields.items():
            var = str(field.description).split(" ")[0]
            raw = env.get(var)
            if raw is None or raw.strip() == "":
                continue
            raw = raw.strip()
            if name == "allow_private_hosts":
                values[name] = raw.lower() in _TRUE
            elif name == "judge":
                if raw.lower() not in ("local", "openai", "anthropic", "ollama"):
                    raise ConfigurationError(
                        f"GUARDRAIL_JUDGE must be one of local, openai, anthropic, ollama (got {raw!r})"
                    )
                values[name] = raw.lower()
            else:
                values[name] = raw
        try:
            return cls.model_validate(values)
        except ValueError as exc:  # pydantic's message names the field; secrets are SecretStr
            raise ConfigurationError(f"invalid guardrail setting: {exc}") from None
