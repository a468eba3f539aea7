"""The request and response bodies of the service (the schemas its OpenAPI document shows)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from guardrail.core.extract import normalize_sources
from guardrail.core.policy import POLICY_PRESETS, Policy
from guardrail.core.schema import Number
from guardrail.store import AuditStatus

__all__ = [
    "ComponentHealth",
    "FetcherHealth",
    "GuardRequest",
    "Health",
    "HealthStatus",
    "PolicySpec",
    "PresetName",
    "PublicHealth",
    "VerifyRequest",
]

HealthStatus = Literal["ok", "degraded", "unavailable"]
"""``ok``: every stage ready; ``degraded``: a model failed to load, or the audit store cannot take
its rows now (they are kept and retried) or lost some; ``unavailable``: a setting is missing or
wrong."""


def _not_blank(value: str, info: ValidationInfo) -> str:
    if not value.strip():
        raise ValueError(f"{info.field_name} must not be empty")
    return value


_Text = Annotated[str, AfterValidator(_not_blank)]
"""A string with something other than white space in it."""

PresetName = Literal["annotate", "default", "strip", "block", "strict", "repair"]
"""The names of :data:`~guardrail.core.policy.POLICY_PRESETS` (a test keeps the two equal)."""

_BAD_POLICY = (
    "not a valid policy: each action is keep, annotate, strip or block, or a combination such as "
    "strip+annotate or [strip, annotate] (keep and block stand alone)"
)
"""Why a policy was refused, without the value sent (422 bodies never echo the request)."""


class VerifyRequest(BaseModel):
    """``POST /v1/verify``: one claim and the URLs it cites."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"claim": "Water boils at 100 degrees Celsius at sea level.", "urls": ["https://example.org/water"]}
            ]
        }
    )

    claim: _Text = Field(description="The claim to check.")
    urls: list[str] = Field(
        min_length=1, description="The URLs the claim cites (at most GUARDRAIL_MAX_URLS unique ones, default 100)."
    )


class PolicySpec(BaseModel):
    """A policy: a preset (``annotate``, ``default``, ``strip``, ``block``, ``strict``, ``repair``)
    with any kind's action overridden (``"keep"``, ``"annotate"``, ``"strip"``, ``"strip+annotate"``,
    ``"block"``); ``unreachable`` is a dead link, ``could_not_check`` a page that did not answer now
    or a failure of ours; optionally a ``min_confidence``, and ``repair`` on any preset."""

    preset: PresetName = "default"
    supported: str | list[str] | None = None
    contradicted: str | list[str] | None = None
    not_found: str | list[str] | None = None
    unreachable: str | list[str] | None = None
    could_not_check: str | list[str] | None = None
    block_message: str | None = None
    min_confidence: Number | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Supported/contradicted verdicts below it count as not_found.",
    )
    repair: bool | None = Field(
        default=None,
        description="Mend citations first: dead links with a supporting archived copy, citations another "
        "source backs (checked against the other sources for it).",
    )

    def build(self) -> Policy:
        """The :class:`~guardrail.core.policy.Policy` this spec names (ValueError for a bad action)."""
        return Policy.preset(self.preset, **self.model_dump(exclude={"preset"}, exclude_none=True))


class GuardRequest(BaseModel):
    """``POST /v1/guard``: an answer to guard, the sources its markers refer to, and a policy."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "answer": "Water boils at 100 degrees Celsius at sea level [1].",
                    "sources": ["https://example.org/water"],
                    "policy": "default",
                    "format": "markdown",
                }
            ]
        }
    )

    answer: _Text = Field(description="The answer (markdown) with its citations.")
    sources: list[str | dict[str, Any]] | None = Field(
        default=None, description="URLs or {url, text, title} objects that [n] markers refer to."
    )
    policy: PresetName | PolicySpec = Field(default="default", description="A preset name, or a PolicySpec.")
    format: Literal["markdown", "html"] = Field(default="markdown", description="How badges are written.")
    answer_date: datetime | date | None = Field(
        default=None,
        description="When the answer was written: a dead link's archived copy closest to it is used "
        "(when the service looks dead links up in an archive); default now.",
    )

    @field_validator("sources")
    @classmethod
    def _usable_sources(cls, value: list[str | dict[str, Any]] | None) -> list[str | dict[str, Any]] | None:
        """Sources the extractor can use, checked here so that a bad one is a 422 like any field
        (the messages name the index and the rule, never the value)."""
        try:
            normalize_sources(value)
        except TypeError as exc:  # pydantic turns only ValueError into a validation error
            raise ValueError(str(exc)) from None
        return value

    @field_validator("policy", mode="before")
    @classmethod
    def _known_preset(cls, value: Any) -> Any:
        """An unknown preset named at ``body.policy`` itself, not at each branch of the union."""
        if isinstance(value, str) and value not in POLICY_PRESETS:
            raise ValueError(f"unknown policy preset; choose from {', '.join(POLICY_PRESETS)}")
        return value

    @field_validator("policy")
    @classmethod
    def _valid_policy(cls, value: PresetName | PolicySpec) -> PresetName | PolicySpec:
        if isinstance(value, PolicySpec):
            try:
                value.build()
            except ValueError:  # pydantic's ValidationError too, whose text would quote the value
                raise ValueError(_BAD_POLICY) from None
        return value

    def build_policy(self) -> Policy:
        """The policy the request names: a preset, or a :class:`PolicySpec`."""
        return Policy.preset(self.policy) if isinstance(self.policy, str) else self.policy.build()


class ComponentHealth(BaseModel):
    """One stage of the service: what it is and whether it is ready."""

    name: str | None = None
    model: str | None = None
    loaded: bool | None = Field(default=None, description="Weights in memory (None: nothing to load).")
    ready: bool = False
    error: str | None = None


class FetcherHealth(BaseModel):
    """The fetcher: its name, the page cache, and whether the SSRF guard is on."""

    name: str | None = None
    ready: bool = False
    cache: str | None = Field(default=None, description="The page cache file, if any.")
    ssrf_guard: bool = True
    error: str | None = None


class PublicHealth(BaseModel):
    """``GET /v1/health`` without the bearer token (when one is set): the status alone."""

    status: HealthStatus


class Health(PublicHealth):
    """``GET /health`` with the bearer token, or when none is set: the status and each stage."""

    judge: ComponentHealth
    embedder: ComponentHealth
    fetcher: FetcherHealth
    audit: AuditStatus | None = Field(default=None, description="The audit store, if any: rows written, waiting, lost.")
    auth: bool = Field(description="Whether routes other than /health need the bearer token.")
