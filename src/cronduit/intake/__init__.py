"""Intake: accepting triggers from outside the loop (the CLI, the HTTP API), durably.

One module per door: :mod:`~cronduit.intake.manual`, :mod:`~cronduit.intake.webhook`,
:mod:`~cronduit.intake.github` and :mod:`~cronduit.intake.backfill` each turn a request into
an accepted event or a :class:`RequestRefused`; :mod:`~cronduit.intake.pausing` and
:mod:`~cronduit.intake.audit` write pauses and the audit log;
:mod:`~cronduit.intake.executions` resumes and abandons durable executions;
:mod:`~cronduit.intake.reports` spells what the CLI's and the API's reads say of jobs and
runs; the
:class:`~cronduit.intake.acceptor.Acceptor` group-commits what the HTTP edge accepts.
"""

from cronduit.intake.backfill import accept_backfill
from cronduit.intake.executions import (
    abandon,
    accept_resume,
    execution_detail,
    execution_summary,
    known_execution,
    resume_refusal_of,
)
from cronduit.intake.github import DeliveryAccepted, accept_code_event, github_delivery_id
from cronduit.intake.manual import PENDING_SCAN, accept_manual, check_inputs, manual_state
from cronduit.intake.refusals import Accepted, RequestRefused, checked_operator
from cronduit.intake.reports import job_facts, job_statuses, run_record
from cronduit.intake.webhook import (
    LABEL_BODY_CHARS,
    accept_webhook,
    webhook_delivery_id,
    webhook_label,
)

__all__ = [
    "LABEL_BODY_CHARS", "PENDING_SCAN", "Accepted", "DeliveryAccepted", "RequestRefused",
    "abandon", "accept_backfill", "accept_code_event", "accept_manual", "accept_resume",
    "accept_webhook", "acceptor", "audit", "check_inputs", "checked_operator",
    "execution_detail", "execution_summary", "executions", "github_delivery_id",
    "job_facts", "job_statuses", "known_execution", "manual_state", "pausing", "reports",
    "resume_refusal_of", "run_record", "webhook_delivery_id", "webhook_label",
]
