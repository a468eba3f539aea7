"""``python -m guardrail.apps.cli``: the ``guardrail`` command."""

from guardrail.apps.cli import main

main()
