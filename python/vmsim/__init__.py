"""vmsim: a fast, faithful simulator of Linux kernel memory management.

>>> import vmsim
>>> r = vmsim.run()                      # the built-in default scenario
>>> print(r.proc["buddyinfo"])           # /proc/buddyinfo at the end, kernel format
>>> r.summary["sys_seconds"]
"""

from vmsim._vmsim import InvariantError, ScenarioError
from vmsim.api import Result, default_scenario, knobs, load_scenario, run, version

__version__ = version()

__all__ = [
    "InvariantError",
    "Result",
    "ScenarioError",
    "default_scenario",
    "knobs",
    "load_scenario",
    "run",
    "__version__",
]
