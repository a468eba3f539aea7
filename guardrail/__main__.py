"""``python -m guardrail``: the ``guardrail`` command."""

from guardrail.apps.cli.main import main

main()
