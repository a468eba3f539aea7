"""What the judges behind a model API share: option checks, a client per call, the retry loop.

Each SDK's specifics (the client class, the request it sends, how it reads the answer) stay in
:mod:`guardrail.judges.openai` and :mod:`guardrail.judges.anthropic`; retries, budgets and
bounded concurrency are :mod:`guardrail.judges.retry`'s.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import SecretStr

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.retry import RetryPolicy, TransientJudgeError, error_for_status, judge_all
from guardrail.settings import ConfigurationError, Settings


class _Client(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Client)


@contextmanager
def sdk_errors(sdk: ModuleType, key_setting: str) -> Iterator[None]:
    """Turn the ``openai``/``anthropic`` SDK's errors (the two name them alike) into judge errors.

    The SDK's own message is never passed on: it can echo part of the key (OpenAI's 401 does).
    ``key_setting`` names the variable an authentication failure points at.
    """
    try:
        yield
    except sdk.APITimeoutError:
        raise TransientJudgeError("timeout") from None
    except sdk.APIConnectionError:
        raise TransientJudgeError("connection_error") from None
    except sdk.APIStatusError as exc:
        raise error_for_status(exc.status_code, exc.response.headers, key_setting) from None
    except (sdk.APIResponseValidationError, ValueError):
        # A 200 whose body is not the documented JSON (a gateway page, truncated JSON).
        raise TransientJudgeError("unreadable response") from None


JudgeT = TypeVar("JudgeT", bound="ApiJudge[Any]")


class ApiJudge(ABC, Generic[ClientT]):
    """A Judge calling a model API through its SDK: one attempt per request is the subclass's.

    The key is held as a ``SecretStr`` and never logged; an empty key or model is a
    ConfigurationError naming the variable. Every call opens its own ``client_class`` client,
    with the SDK's own retries off, and each request is tried under ``retry`` with at most
    ``concurrency`` in flight; a request that fails ends as ``not_found``/``judge_error``, so
    ``judge`` never raises for one bad answer.
    """

    client_class: Callable[..., ClientT]
    """The SDK's async client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``)."""
    default_name: ClassVar[str]
    """The judge's ``name`` unless one is given (``openai``, ``anthropic``)."""
    default_key_setting: ClassVar[str]
    """The variable holding the key (``OPENAI_API_KEY``), named by errors about it."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | SecretStr,
        base_url: str | None = None,
        name: str | None = None,
        key_setting: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 8,
    ) -> None:
        """``model`` at ``base_url`` (None: the SDK's default) with ``api_key``; ``name`` and
        ``key_setting`` default to the class's; ``timeout`` is each attempt's, under ``retry``
        (default: 3 attempts), with at most ``concurrency`` calls in flight."""
        name = name or self.default_name
        key_setting = key_setting or self.default_key_setting
        secret = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        if not secret.get_secret_value().strip():
            raise ConfigurationError(f"{key_setting} is empty")
        if not model or not model.strip():
            raise ConfigurationError("GUARDRAIL_JUDGE_MODEL is empty")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.name = name
        self.model = model.strip()
        self.base_url = base_url
        self.key_setting = key_setting
        self.retry = retry or RetryPolicy(attempt_timeout=timeout)
        self.concurrency = concurrency
        self._api_key = secret

    cpu_bound = False  # the model runs elsewhere: calls may overlap

    @classmethod
    def configured(
        cls: type[JudgeT], settings: Settings, *, api_key: SecretStr | None, base_url: str | None, default_model: str
    ) -> JudgeT:
        """The judge of ``GUARDRAIL_JUDGE_MODEL`` (else ``default_model``) and
        ``GUARDRAIL_JUDGE_TIMEOUT`` with ``api_key`` at ``base_url``: what each ``from_settings``
        builds. ConfigurationError naming the key's variable when it is not set."""
        if api_key is None or not api_key.get_secret_value().strip():
            raise ConfigurationError(
                f"GUARDRAIL_JUDGE={cls.default_name} needs {cls.default_key_setting}, which is not set"
            )
        return cls(
            settings.judge_model or default_model, api_key=api_key, base_url=base_url, timeout=settings.judge_timeout
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    def load(self) -> None:
        """Nothing to load: the model is remote."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order, at most ``concurrency`` calls in flight."""
        if not requests:
            return []
        # A client per call: an httpx pool is bound to the event loop it was created on, and the
        # sync wrappers run each call on a fresh loop.
        client = self.client_class(
            api_key=self._api_key.get_secret_value(),
            base_url=self.base_url,
            timeout=self.retry.attempt_timeout,
            max_retries=0,  # the retry budget is ours (guardrail.judges.retry)
        )
        try:

            async def attempt(request: JudgeRequest, timeout: float) -> JudgeVerdict:
                return await self._attempt(client, request, timeout)

            return await judge_all(
                requests, attempt, policy=self.retry, concurrency=self.concurrency, judge_name=self.name
            )
        finally:
            await client.close()

    @abstractmethod
    async def _attempt(self, client: ClientT, request: JudgeRequest, timeout: float) -> JudgeVerdict:
        """One call for one request within ``timeout`` seconds; raises a JudgeCallError or JudgeParseError."""
