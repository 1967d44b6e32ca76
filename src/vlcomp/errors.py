"""Planned stops of a job: a one-line reason and a documented exit code, not a traceback.

A library function raises a ``JobStop`` subclass when a job cannot or must not finish (an
endpoint refused the key, a budget is spent, a dry run). ``vlcomp.joblog.job_log`` turns it
into one line in the job's log and on stderr and exits with ``exit_code``; Snakemake then
reports the job as failed with that exit status and keeps none of its outputs.

Exit codes (also in README.md, "Exit codes of LLM jobs"):

====  =====================  ===========================================================
code  class                  meaning
====  =====================  ===========================================================
2     InputError             a file the configuration names is missing or unreadable
                             (e.g. one of ``llm.batch_outputs``)
3     EndpointRefused        401/403 (key), 404 (model or endpoint), a 400 no fallback
                             explains, or no API key: fix the configuration
4     EndpointUnreachable    the circuit breaker tripped: consecutive connection
                             failures, timeouts or 5xx, or failing for too long
5     BudgetExhausted        the spend ledger reached a ``llm.budget`` limit
6     DryRun                 ``llm.dry_run``: the estimate was logged, nothing was sent
7     LowYield               accepted / attempted fell below ``llm.min_yield``
8     BatchPending           batch jobs are running, or a vLLM ``run_batch`` command must
                             be run first; rerun afterwards to import and continue
9     EndpointMalformed      ``llm.breaker_malformed`` consecutive unusable answers (HTTP
                             200 bodies that are not a chat completion; empty, non-JSON or
                             off-schema answers)
====  =====================  ===========================================================
"""

from __future__ import annotations


class JobStop(RuntimeError):
    """A planned stop: ``str(self)`` is the whole message (one line), ``exit_code`` the code."""

    exit_code = 1


class InputError(JobStop):
    exit_code = 2


class EndpointRefused(JobStop):
    exit_code = 3


class EndpointUnreachable(JobStop):
    exit_code = 4


class BudgetExhausted(JobStop):
    exit_code = 5


class DryRun(JobStop):
    exit_code = 6


class LowYield(JobStop):
    exit_code = 7


class BatchPending(JobStop):
    exit_code = 8


class EndpointMalformed(JobStop):
    """The endpoint keeps answering HTTP 200 with nothing usable."""

    exit_code = 9


EXIT_CODES = {
    cls.__name__: cls.exit_code
    for cls in (
        EndpointRefused,
        EndpointUnreachable,
        BudgetExhausted,
        DryRun,
        LowYield,
        BatchPending,
        EndpointMalformed,
    )
}
