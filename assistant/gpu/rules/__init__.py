"""`doctor`'s rules: each turns facts into pass / warn / fail (or skip when it does not apply), with
what it saw and the fix. Importing this package registers them all, software first, then the machine.
"""

# isort: off
from assistant.gpu.rules import software  # noqa: F401  (registered first: presence, builds, dtypes)
from assistant.gpu.rules import machine  # noqa: F401  (then the machine: devices, links, shm, heat, memory)

# isort: on
from assistant.gpu.rules.base import RULES, Finding, Rule, Status, overall, run_rules

__all__ = ["RULES", "Finding", "Rule", "Status", "overall", "run_rules"]
