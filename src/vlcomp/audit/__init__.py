"""Benchmark audit: blind baselines, the order-blind ceiling, BindSplit binding overlap
with a reference corpus and a familiarity-shortcut test, as one report per benchmark.

``checks`` runs the checks (``variants``, ``blind_checks``, ``bindsplit``,
``familiarity``) as functions of tables, ``figures`` the figures, ``report`` the Markdown /
HTML rendering and ``jobs`` the job (``audit_job``) that reads and writes files.
"""

from vlcomp.audit.bindsplit import reference_status
from vlcomp.audit.checks import AuditTables, audit_tables
from vlcomp.audit.jobs import audit_job

__all__ = ["AuditTables", "audit_job", "audit_tables", "reference_status"]
