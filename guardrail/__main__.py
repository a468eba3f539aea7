"""``python -m guardrail``: the ``guardrail`` command."""

from guardrail.apps.cli import main

main()
